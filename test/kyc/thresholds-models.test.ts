// The threshold rule is the same for both KYC models: users given their level by a PARTNER_MANAGED
// attestation and by a SERVICE_PROVIDED verification are judged alike at the 10,000 and 50,000 MXN boundaries.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertKycAllowsOrder } from "../../src/domain/kyc.ts";
import { getUserByRef, type User } from "../../src/users/users.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { createUser, decide, servicePartner, startSession } from "./helpers.ts";

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

type Level = "BASIC" | "FULL";

interface Model {
  name: "PARTNER_MANAGED" | "SERVICE_PROVIDED";
  /** A user of this model holding `level` (or none), made through the partner API. */
  user(level: Level | null): Promise<User>;
}

async function loadUser(partnerId: string, ref: string): Promise<User> {
  return getUserByRef(service.pool, partnerId, ref);
}

const partnerManaged: Model = {
  name: "PARTNER_MANAGED",
  async user(level) {
    const partner = await service.createPartner({ kycModel: "PARTNER_MANAGED", tier: "GROWTH" });
    const attestation = level ? { kycAttestation: { level, verifiedAt: new Date().toISOString() } } : {};
    const ref = await createUser(service, partner.apiKey, undefined, attestation);
    return loadUser(partner.id, ref);
  },
};

const serviceProvided: Model = {
  name: "SERVICE_PROVIDED",
  async user(level) {
    const { id, key } = await servicePartner(service, { tier: "GROWTH" });
    const ref = await createUser(service, key);
    if (level) await decide(service, key, (await startSession(service, key, ref, level)).sessionId, "APPROVED");
    return loadUser(id, ref);
  },
};

const cases: { holds: Level | null; volume: string; allowed: boolean }[] = [
  { holds: null, volume: "9999.99", allowed: true },
  { holds: null, volume: "10000", allowed: false },
  { holds: "BASIC", volume: "10000", allowed: true },
  { holds: "BASIC", volume: "50000", allowed: true },
  { holds: "BASIC", volume: "50000.01", allowed: false },
  { holds: "FULL", volume: "50000.01", allowed: true },
];

for (const model of [partnerManaged, serviceProvided]) {
  describe(`${model.name} users`, () => {
    for (const { holds, volume, allowed } of cases) {
      const who = holds ? `a ${holds} user` : "a user without KYC";
      test(`${who} with ${volume} MXN this month ${allowed ? "may place the next order" : "is refused KYC_REQUIRED"}`, async () => {
        const user = await model.user(holds);
        assert.equal(user.kycTier, holds ?? "NONE");
        if (allowed) assert.doesNotThrow(() => assertKycAllowsOrder(user, volume));
        else assert.throws(() => assertKycAllowsOrder(user, volume), { code: "KYC_REQUIRED", status: 403 });
      });
    }
  });
}

test("a SERVICE_PROVIDED user whose verification was rejected stays blocked past 10,000 MXN", async () => {
  const { id, key } = await servicePartner(service, { tier: "GROWTH" });
  const ref = await createUser(service, key);
  await decide(service, key, (await startSession(service, key, ref, "BASIC")).sessionId, "REJECTED");
  const user = await loadUser(id, ref);
  assert.equal(user.kycStatus, "REJECTED");
  assert.throws(() => assertKycAllowsOrder(user, "10000"), { code: "KYC_REQUIRED" });
});
