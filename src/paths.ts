import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root directory (artifacts/, indexer/, node_modules/ and the scripts live below it). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
