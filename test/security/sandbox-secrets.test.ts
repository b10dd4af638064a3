// Decisions section 19: nothing secret is hard-coded; the sandbox's secrets (the simulated KYC provider's
// API key and callback secret, the SIE token) are generated per DATA_DIR, kept across restarts, and
// readable by their owner only. Checked through the real service started on two DATA_DIRs.
import assert from "node:assert/strict";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { startTestService } from "../support/service.ts";

let root: string;
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "sandbox-secrets-"));
});
after(() => rm(root, { recursive: true, force: true }));

/** The secrets a service started on `dataDir` uses; the service is stopped again (a restart is another call). */
async function secretsOf(dataDir: string) {
  const service = await startTestService({ DATA_DIR: dataDir });
  try {
    assert.ok(service.sandboxSecrets, "a sandbox service has its secrets");
    return service.sandboxSecrets;
  } finally {
    await service.close();
  }
}

test("each DATA_DIR gets its own secrets, kept across restarts, in a file only its owner can read", async () => {
  const first = path.join(root, "one");
  const second = path.join(root, "two");
  const generated = await secretsOf(first);
  assert.match(generated.kycApiKey, /^sbx_kyc_[0-9a-f]{32}$/);
  assert.match(generated.kycSecret, /^[0-9a-f]{64}$/);
  assert.match(generated.banxicoToken, /^[0-9a-f]{64}$/);

  assert.deepEqual(await secretsOf(first), generated, "the same secrets after a restart");

  const other = await secretsOf(second);
  for (const name of ["kycApiKey", "kycSecret", "banxicoToken"] as const) assert.notEqual(other[name], generated[name], `${name} differs per DATA_DIR`);

  for (const dir of [first, second]) {
    const file = await stat(path.join(dir, "sandbox-secrets.json"));
    assert.equal(file.mode & 0o777, 0o600, `${dir}/sandbox-secrets.json is mode 0600`);
  }
});
