// The committed ABI module must be exactly what scripts/export-abi.ts renders from the compiled
// artifacts (the test runner compiles first), so a contract change without `npm run abi` fails here.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";
import { abiModulePath, renderAbiModule } from "../../scripts/export-abi.ts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { readArtifact } from "../../src/stack/deploy.ts";

describe("src/chain/escrow-abi.ts", () => {
  it("is identical to the ABI rendered from the current Hardhat artifacts (run `npm run abi` if not)", async () => {
    const committed = await readFile(abiModulePath, "utf8");
    assert.equal(committed, await renderAbiModule(), "src/chain/escrow-abi.ts is stale: run `npm run abi` and commit it");
  });

  it("exports the artifacts' ABIs as values", async () => {
    assert.deepEqual(escrowAbi, (await readArtifact("OfframpEscrow")).abi);
    assert.deepEqual(testUsdcAbi, (await readArtifact("TestUSDC")).abi);
  });
});
