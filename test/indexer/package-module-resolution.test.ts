// The resolve hook preloaded into Ponder's process (src/stack/package-module-resolution.ts) answers only
// what Node would: a relative `.js` import inside one installed package in a "type": "module" scope, as
// that file, an ES module; everything else is left to Node. Checked on packages laid out on disk, each
// case in a child process (the hook registers itself where it is imported).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { repoRoot } from "../../src/paths.ts";

const HOOK = pathToFileURL(path.join(repoRoot, "src/stack/package-module-resolution.ts")).href;
const run = promisify(execFile);

let root: string;
const modules = () => path.join(root, "node_modules");
const urlOf = (...parts: string[]) => pathToFileURL(path.join(modules(), ...parts)).href;

/** Files under the temporary folder, by path relative to it. */
const FILES: Record<string, string> = {
  "node_modules/esm-pkg/package.json": JSON.stringify({ name: "esm-pkg", type: "module", exports: { ".": "./index.js", "./lib/a.js": "./lib/a.js", "./broken.js": "./broken.js" } }),
  "node_modules/esm-pkg/index.js": 'import { a } from "./lib/a.js"; import b from "./cjs/b.js"; export { a, b };',
  "node_modules/esm-pkg/lib/a.js": "export const a = { from: 'a' };",
  "node_modules/esm-pkg/cjs/package.json": JSON.stringify({ type: "commonjs" }),
  "node_modules/esm-pkg/cjs/b.js": "module.exports = { from: 'b, CommonJS' };",
  "node_modules/esm-pkg/broken.js": 'import "./missing.js";',
  "node_modules/@scope/typeless/package.json": JSON.stringify({ name: "@scope/typeless", exports: { "./c.js": "./_esm/entry.js" } }),
  "node_modules/@scope/typeless/_esm/package.json": JSON.stringify({ type: "module" }),
  "node_modules/@scope/typeless/_esm/entry.js": 'export { c } from "./deeper/c.js";',
  "node_modules/@scope/typeless/_esm/deeper/c.js": "export const c = { from: 'c' };",
  "node_modules/@scope/typeless/plain.js": "module.exports = 1;",
  "app.mjs": [
    'import * as pkg from "esm-pkg";',
    'import { a } from "esm-pkg/lib/a.js";',
    'import { c } from "@scope/typeless/c.js";',
    "let broken;",
    'try { await import("esm-pkg/broken.js"); } catch (error) { broken = error.code; }',
    "console.log(JSON.stringify({ a: pkg.a, b: pkg.b, sameA: pkg.a === a, c, broken }));",
  ].join("\n"),
};

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "package-resolution-"));
  for (const [file, text] of Object.entries(FILES)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  }
  await symlink(path.join(modules(), "esm-pkg/lib/a.js"), path.join(modules(), "esm-pkg/lib/linked.js"));
});
after(() => rm(root, { recursive: true, force: true }));

/** What resolvePackageModule answers for each [specifier, parent URL], in a child process. */
async function answers(cases: [string, string][]): Promise<unknown[]> {
  const script = `import { resolvePackageModule } from ${JSON.stringify(HOOK)}; console.log(JSON.stringify(${JSON.stringify(cases)}.map(([s, p]) => resolvePackageModule(s, p) ?? null)));`;
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: root });
  return JSON.parse(stdout) as unknown[];
}

test("a relative .js import within a package whose nearest package.json is type module is that file, as an ES module", async () => {
  const found = await answers([
    ["./lib/a.js", urlOf("esm-pkg/index.js")],
    ["./deeper/c.js", urlOf("@scope/typeless/_esm/entry.js")],
    ["../index.js", urlOf("esm-pkg/lib/a.js")],
  ]);
  assert.deepEqual(found, [
    { url: urlOf("esm-pkg/lib/a.js"), format: "module" },
    { url: urlOf("@scope/typeless/_esm/deeper/c.js"), format: "module" },
    { url: urlOf("esm-pkg/index.js"), format: "module" },
  ]);
});

test("everything else is left to Node: other scopes, other packages, bare specifiers, missing or linked files, code outside node_modules", async () => {
  const found = await answers([
    ["./cjs/b.js", urlOf("esm-pkg/index.js")], // nearest package.json says commonjs
    ["./plain.js", urlOf("@scope/typeless/index.js")], // no type: Node detects the syntax
    ["../@scope/typeless/_esm/entry.js", urlOf("esm-pkg/index.js")], // another package
    ["esm-pkg", urlOf("@scope/typeless/_esm/entry.js")],
    ["./missing.js", urlOf("esm-pkg/broken.js")],
    ["./lib/linked.js", urlOf("esm-pkg/index.js")],
    ["./lib/a.cjs", urlOf("esm-pkg/index.js")],
    ["./app.js", pathToFileURL(path.join(root, "app.mjs")).href],
    ["./lib/a.js", "data:text/javascript,"],
  ]);
  assert.deepEqual(found, Array(9).fill(null));
});

test("a package graph loads the same with the hook as without it: CommonJS stays CommonJS, one instance per file, a missing file is Node's ERR_MODULE_NOT_FOUND", async () => {
  const plain = await run(process.execPath, ["app.mjs"], { cwd: root });
  const hooked = await run(process.execPath, ["--import", HOOK, "app.mjs"], { cwd: root });
  const expected = { a: { from: "a" }, b: { from: "b, CommonJS" }, sameA: true, c: { from: "c" }, broken: "ERR_MODULE_NOT_FOUND" };
  assert.deepEqual(JSON.parse(plain.stdout), expected);
  assert.deepEqual(JSON.parse(hooked.stdout), expected);
});
