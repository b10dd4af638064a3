// Ponder builds the indexer's files (config, schema, handlers) with vite-node, which decides module by
// module whether Node imports it as it is or Vite transforms it first. Patched (patches/vite-node+1.0.2.patch):
// a file of a package that declares "type": "module" is imported by Node, whatever its folder is called;
// vite-node 1.0.2 guessed from the path first and sent every module under esm/ (Ponder's own, graphql-yoga's
// and its dependencies, 420 of them) through Vite at each start of Ponder. Checked on packages laid out on disk.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { shouldExternalize } from "vite-node/server";
import { repoRoot } from "../../src/paths.ts";

let root: string;

/** Files under the temporary folder, by path relative to it. */
const FILES: Record<string, string> = {
  "node_modules/typed-esm/package.json": JSON.stringify({ name: "typed-esm", type: "module" }),
  "node_modules/typed-esm/esm/index.js": "export const a = 1;",
  "node_modules/typed-esm/dist/index.esm.js": "export const a = 1;",
  "node_modules/untyped-esm/package.json": JSON.stringify({ name: "untyped-esm" }),
  "node_modules/untyped-esm/esm/index.js": "export const a = 1;",
  "node_modules/untyped-cjs/package.json": JSON.stringify({ name: "untyped-cjs" }),
  "node_modules/untyped-cjs/lib/index.js": "module.exports = 1;",
};

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "ponder-build-imports-"));
  for (const [file, text] of Object.entries(FILES)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  }
});
after(() => rm(root, { recursive: true, force: true }));

/** What vite-node answers for a file: its path when Node imports it, false when Vite transforms it. Each call its own cache. */
const decision = (file: string) => shouldExternalize(file, {}, new Map());

test("a module under esm/ of a package that declares type module is imported by Node, not transformed", async () => {
  const file = path.join(root, "node_modules/typed-esm/esm/index.js");
  assert.equal(await decision(file), file);
  const named = path.join(root, "node_modules/typed-esm/dist/index.esm.js");
  assert.equal(await decision(named), named);
});

test("a module with ES syntax under esm/ of a package that does not declare its type is still transformed", async () => {
  assert.equal(await decision(path.join(root, "node_modules/untyped-esm/esm/index.js")), false);
});

test("a CommonJS module of a package that does not declare its type is imported by Node, as before", async () => {
  const file = path.join(root, "node_modules/untyped-cjs/lib/index.js");
  assert.equal(await decision(file), file);
});

test("Ponder's own modules and graphql-yoga's, which its index imports, are imported by Node", async () => {
  for (const file of ["node_modules/ponder/dist/esm/index.js", "node_modules/graphql-yoga/esm/index.js", "node_modules/@graphql-tools/utils/esm/index.js"]) {
    const absolute = path.join(repoRoot, file);
    assert.equal(await decision(absolute), absolute, file);
  }
});

test("the indexer's own TypeScript files are still built by Vite", async () => {
  assert.equal(await decision(path.join(repoRoot, "indexer/src/escrow.ts")), false);
  assert.equal(await decision(path.join(repoRoot, "indexer/ponder.schema.ts")), false);
});
