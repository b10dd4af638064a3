// Preloaded (`--import`) into the Ponder indexer's process (indexer-process.ts), which loads thousands of
// npm modules at start. Node 24 finds the format of every `.js` file it resolves from the nearest
// package.json, and each time copies that file's parsed fields, which parses its `exports` map again:
// drizzle-orm's is 175 KB, parsed for each of its 440 files. That was a fifth of Ponder's CPU from spawn
// to ready (1.1 of 4.9 s profiled); with this hook Ponder is ready with about 0.7 s less CPU, of 6
// (docs/benchmarks.md, stop 55). A relative `.js` import between files of one installed package whose
// nearest package.json says "type": "module" is resolved here, that answer kept per folder; anything else
// (bare specifiers, other types, a file missing or linked) goes to Node's own resolution, which then
// decides and errs exactly as without this hook.
import { lstatSync, readFileSync } from "node:fs";
import { registerHooks } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Each folder's nearest package.json "type" ("" when it names none), or null where Node should decide. */
const typeOfFolder = new Map<string, string | null>();

function nearestPackageType(folder: string, packageRoot: string): string | null {
  const known = typeOfFolder.get(folder);
  if (known !== undefined) return known;
  let type: string | null;
  const manifest = lstatSync(path.join(folder, "package.json"), { throwIfNoEntry: false });
  if (manifest?.isFile()) {
    try {
      const parsed = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8")) as { type?: unknown };
      type = typeof parsed.type === "string" ? parsed.type : "";
    } catch {
      type = null; // Node reports an unreadable package.json itself
    }
  } else {
    type = folder === packageRoot ? null : nearestPackageType(path.dirname(folder), packageRoot);
  }
  typeOfFolder.set(folder, type);
  return type;
}

/** The folder of the installed package holding `file` (node_modules/<name> or node_modules/@scope/<name>). */
function packageRootOf(file: string): string | undefined {
  const marker = `${path.sep}node_modules${path.sep}`;
  const at = file.lastIndexOf(marker);
  if (at === -1) return undefined;
  const parts = file.slice(at + marker.length).split(path.sep);
  const depth = parts[0]!.startsWith("@") ? 2 : 1;
  if (parts.length <= depth) return undefined;
  return file.slice(0, at + marker.length) + parts.slice(0, depth).join(path.sep);
}

/**
 * Where a relative `.js` import from a file of an installed package leads, as an ES module, when the
 * target is a plain file of the same package in a "type": "module" scope; otherwise undefined.
 */
export function resolvePackageModule(specifier: string, parentURL: string | undefined): { url: string; format: "module" } | undefined {
  if (parentURL === undefined || !parentURL.startsWith("file:") || !specifier.endsWith(".js")) return undefined;
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return undefined;
  const parentFile = fileURLToPath(parentURL);
  const packageRoot = packageRootOf(parentFile);
  if (packageRoot === undefined) return undefined;
  const file = path.resolve(path.dirname(parentFile), specifier);
  if (packageRootOf(file) !== packageRoot) return undefined;
  if (lstatSync(file, { throwIfNoEntry: false })?.isFile() !== true) return undefined;
  if (nearestPackageType(path.dirname(file), packageRoot) !== "module") return undefined;
  return { url: pathToFileURL(file).href, format: "module" };
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = resolvePackageModule(specifier, context.parentURL);
    return resolved ? { ...resolved, shortCircuit: true } : nextResolve(specifier, context);
  },
});
