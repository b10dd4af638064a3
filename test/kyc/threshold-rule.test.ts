// The KYC threshold rule (decisions section 4), as POST /orders applies it: the level required is taken
// from the user's monthly volume before the new order.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertKycAllowsOrder, requiredKycLevel } from "../../src/domain/kyc.ts";

type Tier = "NONE" | "BASIC" | "FULL";
const user = (kycStatus: string, kycTier: Tier) => ({ kycStatus, kycTier });
const refused = { code: "KYC_REQUIRED", status: 403 };

describe("requiredKycLevel", () => {
  test("under 10,000 MXN (9,999.99) no KYC is required", () => {
    assert.equal(requiredKycLevel("9999.99"), null);
  });
  test("at 10,000 MXN BASIC is required", () => {
    assert.equal(requiredKycLevel("10000"), "BASIC");
  });
  test("at 50,000 MXN BASIC is still enough", () => {
    assert.equal(requiredKycLevel("50000.00"), "BASIC");
  });
  test("above 50,000 MXN (50,000.01) FULL is required", () => {
    assert.equal(requiredKycLevel("50000.01"), "FULL");
  });
  test("no volume requires nothing", () => {
    assert.equal(requiredKycLevel("0"), null);
  });
});

describe("assertKycAllowsOrder", () => {
  test("a user without KYC trades at 9,999.99 MXN", () => {
    assert.doesNotThrow(() => assertKycAllowsOrder(user("NOT_REQUIRED", "NONE"), "9999.99"));
  });
  test("a user without KYC is refused KYC_REQUIRED (403) at 10,000 MXN", () => {
    assert.throws(() => assertKycAllowsOrder(user("NOT_REQUIRED", "NONE"), "10000"), refused);
  });
  test("a BASIC user trades at 50,000 MXN", () => {
    assert.doesNotThrow(() => assertKycAllowsOrder(user("APPROVED", "BASIC"), "50000"));
  });
  test("a BASIC user is refused at 50,000.01 MXN", () => {
    assert.throws(() => assertKycAllowsOrder(user("APPROVED", "BASIC"), "50000.01"), refused);
  });
  test("a FULL user trades above 50,000 MXN", () => {
    assert.doesNotThrow(() => assertKycAllowsOrder(user("APPROVED", "FULL"), "1000000"));
  });
  test("a PENDING user without a level is refused past the threshold", () => {
    assert.throws(() => assertKycAllowsOrder(user("PENDING", "NONE"), "10000"), refused);
  });
  test("a REJECTED user past a threshold stays blocked", () => {
    assert.throws(() => assertKycAllowsOrder(user("REJECTED", "NONE"), "10000"), refused);
  });
  test("a REJECTED user under 10,000 MXN still trades", () => {
    assert.doesNotThrow(() => assertKycAllowsOrder(user("REJECTED", "NONE"), "9999.99"));
  });
  test("a BASIC user with a FULL verification pending keeps trading under BASIC's limit", () => {
    assert.doesNotThrow(() => assertKycAllowsOrder(user("PENDING", "BASIC"), "50000"));
  });
  test("a FULL holder whose later verification was rejected still holds FULL", () => {
    assert.doesNotThrow(() => assertKycAllowsOrder(user("REJECTED", "FULL"), "50000.01"));
  });
  test("the refusal says which level is required", () => {
    assert.throws(() => assertKycAllowsOrder(user("APPROVED", "BASIC"), "60000"), /requires FULL KYC/);
  });
});
