import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { priceQuote } from "../../src/domain/pricing.ts";
import { assertStatus } from "../support/assertions.ts";
import { formatCents, oracleQuote, plainDecimal } from "../support/cents-oracle.ts";
import { startTestService, type TestService } from "../support/service.ts";

// Decisions section 5, checked against the BigInt oracle of test/support/cents-oracle.ts:
// gross = round_half_up(amount x rate, 2), fee = round_half_up(gross x feePercent / 100, 2), net = gross - fee.

/** USDC amounts with up to 6 decimals, 0.000001 to 1,000,000, written as a client would (no trailing zeros). */
const amountUsdc = fc.bigInt({ min: 1n, max: 10n ** 12n }).map((micro) => plainDecimal(micro, 6));
/** Rates with 4 to 6 decimals between 1 and 99.999999, written with their full precision like FIX ("17.2500"). */
const rate = fc
  .integer({ min: 4, max: 6 })
  .chain((decimals) => fc.bigInt({ min: 10n ** BigInt(decimals), max: 100n * 10n ** BigInt(decimals) - 1n }).map((units) => plainDecimal(units, decimals, true)));
/** feePercent 0 to 10 with at most 2 decimals. */
const feePercent = fc.integer({ min: 0, max: 1000 }).map((hundredths) => plainDecimal(BigInt(hundredths), 2));

// Cases on the rounding edges: exactly half a cent rounds up, just below it rounds down.
const edges: [string, string, string][] = [
  ["1", "1.005", "0"], // gross 1.005 -> 1.01
  ["1", "1.004999", "0"], // gross 1.004999 -> 1.00
  ["0.5", "1.0100", "1"], // gross 0.505 -> 0.51; fee 0.0051 -> 0.01
  ["100", "17.2500", "1.5"], // fee 25.875 -> 25.88
  ["1", "10.0000", "0.05"], // fee 0.005 -> 0.01
  ["1000000", "99.999999", "10"], // the largest quote
  ["0.000001", "1.0000", "10"], // a gross of 0.000001 MXN rounds to 0
];

test("priceQuote matches the integer-cents oracle for any amount, rate and fee", () => {
  fc.assert(
    fc.property(amountUsdc, rate, feePercent, (amount, fx, fee) => {
      const expected = oracleQuote(amount, fx, fee);
      const priced = priceQuote(amount, fx, fee);
      assert.equal(priced.grossAmountMxn.toFixed(2), formatCents(expected.grossCents));
      assert.equal(priced.feeAmountMxn.toFixed(2), formatCents(expected.feeCents));
      assert.equal(priced.netAmountMxn.toFixed(2), formatCents(expected.netCents));
    }),
    { numRuns: 3000, examples: edges },
  );
});

test("priceQuote's amounts have at most two decimals and net = gross - fee exactly", () => {
  fc.assert(
    fc.property(amountUsdc, rate, feePercent, (amount, fx, fee) => {
      const priced = priceQuote(amount, fx, fee);
      for (const value of [priced.grossAmountMxn, priced.feeAmountMxn, priced.netAmountMxn]) assert.ok(value.decimalPlaces() <= 2);
      assert.ok(priced.grossAmountMxn.minus(priced.feeAmountMxn).equals(priced.netAmountMxn));
    }),
    { numRuns: 1000, examples: edges },
  );
});

let service: TestService;
let key: string;

before(async () => {
  service = await startTestService();
  const partner = await service.createPartner({ tier: "ENTERPRISE" });
  key = partner.apiKey;
  assertStatus(await service.api("POST", "/users", { key, body: { partnerUserRef: "seller" } }), 201);
});
after(() => service.close());

test("POST /quotes answers the oracle's amounts as JSON numbers for any amount, rate and fee", async () => {
  await fc.assert(
    fc.asyncProperty(amountUsdc, rate, feePercent, async (amount, fx, fee) => {
      // A new central-bank rate: the cache is emptied so the next quote fetches it.
      service.simulators!.banxico.setRate(fx);
      await service.pool.query("DELETE FROM exchange_rates");
      const feeRecipient = fee === "0" ? "NONE" : "PARTNER";
      // The body is written by hand so the decimals reach the service exactly as a client writes them.
      const rawBody = `{"type":"SELL","amountUsdc":${amount},"partnerUserRef":"seller","feePercent":${fee},"feeRecipient":"${feeRecipient}"}`;
      const response = await service.api("POST", "/quotes", { key, rawBody });
      assertStatus(response, 201);

      const expected = oracleQuote(amount, fx, fee);
      assert.equal(response.body.amountUsdc, Number(amount));
      assert.equal(response.body.exchangeRate, Number(fx));
      assert.equal(response.body.feePercent, Number(fee));
      assert.equal(response.body.grossAmountMxn, Number(formatCents(expected.grossCents)));
      assert.equal(response.body.feeAmountMxn, Number(formatCents(expected.feeCents)));
      assert.equal(response.body.netAmountMxn, Number(formatCents(expected.netCents)));

      const { rows } = await service.pool.query<{ gross_mxn: string; fee_mxn: string; net_mxn: string }>(
        "SELECT gross_mxn, fee_mxn, net_mxn FROM quotes WHERE id = $1",
        [response.body.id],
      );
      assert.deepEqual(rows[0], {
        gross_mxn: formatCents(expected.grossCents),
        fee_mxn: formatCents(expected.feeCents),
        net_mxn: formatCents(expected.netCents),
      });
    }),
    { numRuns: 40, examples: edges },
  );
});
