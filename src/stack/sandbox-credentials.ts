// The sandbox's own state, kept by `npm start` in `$DATA_DIR/sandbox.json` (mode 0600) so that every
// start prints the same working credentials. Sandbox only: a production start never writes it.
//
//   adminToken        generated on the first start when ADMIN_TOKEN is unset (`npm run admin` reads it)
//   demoPartner       the demo partner's id, API key and webhook secret, as created on the first start
//   demoOwner         the demo partner's dashboard OWNER: email and password, as created on the first start
//   localChainSchema  the indexer schema of the last start's local Hardhat chain (dropped by the next start)
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";

export interface SandboxState {
  adminToken?: string;
  demoPartner?: { id: string; apiKey: string; webhookSecret: string };
  demoOwner?: { email: string; password: string };
  localChainSchema?: string;
}

export function sandboxStateFile(dataDir: string): string {
  return path.resolve(dataDir, "sandbox.json");
}

/** The state in `dataDir`, or an empty one when there is no file yet. A damaged file is an error. */
export async function readSandboxState(dataDir: string): Promise<SandboxState> {
  const file = sandboxStateFile(dataDir);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not valid JSON: fix or delete it (a new admin token and demo partner are then created)`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error(`${file} does not hold a JSON object`);
  const state = parsed as Record<string, unknown>;
  const result: SandboxState = {};
  if (typeof state.adminToken === "string" && state.adminToken.length >= 16) result.adminToken = state.adminToken;
  const demo = state.demoPartner as Record<string, unknown> | undefined;
  if (demo && typeof demo.id === "string" && typeof demo.apiKey === "string" && typeof demo.webhookSecret === "string") {
    result.demoPartner = { id: demo.id, apiKey: demo.apiKey, webhookSecret: demo.webhookSecret };
  }
  const owner = state.demoOwner as Record<string, unknown> | undefined;
  if (owner && typeof owner.email === "string" && typeof owner.password === "string") result.demoOwner = { email: owner.email, password: owner.password };
  if (typeof state.localChainSchema === "string") result.localChainSchema = state.localChainSchema;
  return result;
}

/** Writes the state atomically, readable by its owner only. */
export async function writeSandboxState(dataDir: string, state: SandboxState): Promise<void> {
  const file = sandboxStateFile(dataDir);
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

export function generateAdminToken(): string {
  return randomBytes(24).toString("hex");
}
