// Decisions 1 and 7: the balances of the keys that pay for the service's transactions are watched. Below
// SIGNER_MIN_BALANCE_ETH, or below a day of the key's recent spending, /readyz names it (and stays ready),
// a Prometheus gauge says so, and the admin API (read by the console) shows it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseEther, type Address } from "viem";
import { dailySpend, watchSignerBalances } from "../../src/chain/signer-balance.ts";
import { createLogger } from "../../src/logger.ts";
import { devAccounts, DEV_ACCOUNT } from "../../src/stack/local-node.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { startTradeStack, type TradeStack } from "../support/trade-stack.ts";

const SERVICE = devAccounts[DEV_ACCOUNT.service].address;
const logger = createLogger("silent");

describe("what counts as low", () => {
  test("a day of spending is the balance's falls over the samples, scaled to a day; top-ups are not spending", () => {
    const hour = 3600_000;
    assert.equal(dailySpend([{ at: 0, wei: 10n }]), 0n);
    assert.equal(dailySpend([{ at: 0, wei: 100n }, { at: hour, wei: 90n }, { at: 2 * hour, wei: 500n }, { at: 3 * hour, wei: 490n }]), (20n * 24n) / 3n);
  });

  test("a balance below SIGNER_MIN_BALANCE_ETH is low, with the reason", async () => {
    const watch = watchSignerBalances({ publicClient: { getBalance: async () => parseEther("0.01") }, signers: [{ role: "service", address: SERVICE }], minimumWei: parseEther("0.05"), logger, intervalMs: 3_600_000 });
    try {
      const [reading] = await watch.check();
      assert.equal(reading!.low, true);
      assert.match(reading!.reason!, /0\.01 ETH is below SIGNER_MIN_BALANCE_ETH \(0\.05 ETH\)/);
    } finally {
      watch.stop();
    }
  });

  test("a balance above the minimum but below a day of its recent spending is low", async () => {
    let clock = 0;
    const balances = [parseEther("10"), parseEther("9")];
    const watch = watchSignerBalances({
      publicClient: { getBalance: async () => balances.shift() ?? parseEther("9") },
      signers: [{ role: "service", address: SERVICE as Address }],
      minimumWei: parseEther("0.05"),
      logger,
      intervalMs: 3_600_000,
      now: () => clock,
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 50)); // the first reading (10 ETH), taken at start
      clock = 3600_000;
      const [reading] = await watch.check(); // 9 ETH an hour later: 1 ETH an hour, 24 a day
      assert.equal(reading!.dailySpendEth, "24");
      assert.equal(reading!.low, true);
      assert.match(reading!.reason!, /9 ETH is less than a day of its recent spending \(24 ETH a day\)/);
    } finally {
      watch.stop();
    }
  });
});

describe("reported by the running service", () => {
  let stack: TradeStack;
  // The development accounts hold 10,000 ETH: a minimum above that makes both keys low.
  before(async () => {
    stack = await startTradeStack({ SIGNER_MIN_BALANCE_ETH: "20000" });
  });
  after(() => stack?.close());

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${stack.service.baseUrl}${path}`, { headers });
    return { status: response.status, text: await response.text() };
  };

  test("/readyz stays ready and names the low balance of each key", async () => {
    let body: Record<string, string> = {};
    for (let i = 0; i < 50 && !String(body.signerBalance ?? "").startsWith("low"); i += 1) {
      const ready = await get("/readyz");
      assert.equal(ready.status, 200);
      body = JSON.parse(ready.text) as Record<string, string>;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(body.status, "ready");
    assert.match(body.signerBalance!, /^low: service 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 .* below SIGNER_MIN_BALANCE_ETH \(20000 ETH\); arbiter /);
  });

  test("/metrics has each key's balance and a low flag", async () => {
    const metrics = (await get("/metrics")).text;
    assert.match(metrics, new RegExp(`offramp_signer_balance_low\\{role="service",address="${SERVICE}"\\} 1`));
    assert.match(metrics, /offramp_signer_balance_eth\{role="arbiter",address="0x[0-9a-fA-F]{40}"\} \d+/);
    assert.match(metrics, /offramp_signer_daily_spend_eth\{role="service"/);
  });

  test("GET /admin/v1/signers reads both balances now and says which are low and why; the admin document lists it", async () => {
    const response = await stack.service.admin<{ signers: { role: string; address: string; balanceEth: string; minimumEth: string; low: boolean; reason: string }[] }>("GET", "/signers");
    assert.equal(response.status, 200);
    assert.deepEqual(response.body.signers.map((signer) => [signer.role, signer.low, signer.minimumEth]), [["service", true, "20000"], ["arbiter", true, "20000"]]);
    assert.equal(response.body.signers[0]!.address, SERVICE);
    assert.ok(Number(response.body.signers[0]!.balanceEth) > 9000);
    const document = JSON.parse((await get("/admin/v1/openapi.json", { Authorization: `Bearer ${ADMIN_TOKEN}` })).text) as { paths: Record<string, { get?: { responses: Record<string, unknown> } }> };
    assert.ok(document.paths["/signers"]?.get?.responses["503"], "documented, with CHAIN_UNAVAILABLE");
  });
});
