import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { TestService } from "../support/service.ts";
import { SELLER_CLABE, startOfflineOrderService } from "../support/trade-stack.ts";

type Json = Record<string, unknown>;

// Decisions section 4: the level required comes from the user's monthly volume BEFORE the new order
// (at least 10,000 MXN requires BASIC, above 50,000 MXN requires FULL). The order that crosses a
// threshold is accepted; the next one answers KYC_REQUIRED (403) until the user holds the level.
// The rate is the sandbox's 17.25 MXN per USDC.

let service: TestService;
const partners: Record<"PARTNER_MANAGED" | "SERVICE_PROVIDED", string> = { PARTNER_MANAGED: "", SERVICE_PROVIDED: "" };
let counter = 0;

before(async () => {
  service = await startOfflineOrderService();
  for (const model of ["PARTNER_MANAGED", "SERVICE_PROVIDED"] as const) {
    partners[model] = (await service.createPartner({ tier: "ENTERPRISE", kycModel: model })).apiKey;
  }
});
after(() => service.close());

async function newUser(key: string): Promise<string> {
  const ref = `kyc-${++counter}`;
  assert.equal((await service.api("POST", "/users", { key, body: { partnerUserRef: ref } })).status, 201);
  return ref;
}

async function order(key: string, ref: string, amountUsdc: number) {
  const quote = await service.api<{ id: string }>("POST", "/quotes", { key, body: { type: "SELL", amountUsdc, partnerUserRef: ref } });
  return service.api<Json>("POST", "/orders", { key, body: { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE } });
}

/** Gives the user exactly `mxn` of monthly volume with one order of that total. */
async function volume(key: string, ref: string, mxn: number): Promise<void> {
  const response = await order(key, ref, Number((mxn / 17.25).toFixed(6)));
  assert.equal(response.status, 201, JSON.stringify(response.body));
  assert.equal(response.body.totalMxn, mxn);
}

async function grant(ref: string, tier: "BASIC" | "FULL", status = "APPROVED"): Promise<void> {
  await service.pool.query("UPDATE users SET kyc_tier = $2, kyc_status = $3 WHERE partner_user_ref = $1", [ref, tier, status]);
}

for (const model of ["PARTNER_MANAGED", "SERVICE_PROVIDED"] as const) {
  describe(`${model} partner`, () => {
    test("9,999.99 MXN before the order: no KYC needed", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await volume(key, ref, 9999.99);
      assert.equal((await order(key, ref, 1)).status, 201);
    });

    test("10,000 MXN before the order: KYC_REQUIRED without BASIC", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await volume(key, ref, 10000);
      const refused = await order(key, ref, 1);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error, "KYC_REQUIRED");
    });

    test("10,000 MXN before the order: accepted with BASIC", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await volume(key, ref, 10000);
      await grant(ref, "BASIC");
      assert.equal((await order(key, ref, 1)).status, 201);
    });

    test("the order that crosses 10,000 MXN is accepted, the next is refused", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await volume(key, ref, 9000);
      assert.equal((await order(key, ref, 100)).status, 201); // 9,000 before: crosses to 10,725
      assert.equal((await order(key, ref, 1)).body.error, "KYC_REQUIRED");
    });

    test("50,000 MXN before the order: BASIC is enough", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await grant(ref, "BASIC");
      await volume(key, ref, 50000);
      assert.equal((await order(key, ref, 1)).status, 201);
    });

    test("50,000.01 MXN before the order: KYC_REQUIRED with BASIC, accepted with FULL", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await grant(ref, "BASIC");
      await volume(key, ref, 50000.01);
      const refused = await order(key, ref, 1);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error, "KYC_REQUIRED");
      await grant(ref, "FULL");
      assert.equal((await order(key, ref, 1)).status, 201);
    });

    test("a REJECTED user past a threshold stays blocked", async () => {
      const key = partners[model];
      const ref = await newUser(key);
      await volume(key, ref, 10000);
      await grant(ref, "NONE" as "BASIC", "REJECTED");
      assert.equal((await order(key, ref, 1)).body.error, "KYC_REQUIRED");
    });
  });
}

test("concurrent orders of one user are checked one after another: only those before the threshold pass", async () => {
  // 6,000 MXN each: the first two see 0 and 6,000 MXN before them; from the third on 12,000 MXN needs BASIC.
  const key = partners.PARTNER_MANAGED;
  const ref = await newUser(key);
  const quotes: string[] = [];
  for (let i = 0; i < 8; i += 1) {
    const quote = await service.api<{ id: string }>("POST", "/quotes", { key, body: { type: "SELL", amountUsdc: Number((6000 / 17.25).toFixed(6)), partnerUserRef: ref } });
    assert.equal(quote.status, 201);
    quotes.push(quote.body.id);
  }
  const responses = await Promise.all(quotes.map((quoteId) => service.api<Json>("POST", "/orders", { key, body: { quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE } })));
  assert.deepEqual(responses.map((response) => response.status).sort(), [201, 201, 403, 403, 403, 403, 403, 403]);
  for (const refused of responses.filter((response) => response.status === 403)) assert.equal(refused.body.error, "KYC_REQUIRED");
  const { rows } = await service.pool.query<{ n: string }>("SELECT count(*) AS n FROM orders o JOIN users u ON u.id = o.user_id WHERE u.partner_user_ref = $1", [ref]);
  assert.equal(Number(rows[0]!.n), 2);
});
