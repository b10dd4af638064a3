import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { adminOrder, disputedOrder, resolve, waitForAdminStatus, type DisputedOrder } from "../disputes/support.ts";
import { decide, startSession } from "../kyc/helpers.ts";
import { assertStatus } from "../support/assertions.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { placeOrder, startTradeStack, waitFor, waitForSettled, type TradeStack } from "../support/trade-stack.ts";
import { startReceiver, type TestReceiver } from "../webhooks/support/receiver.ts";
import { launchChromium, screenshot, type Browser } from "./browser.ts";
import { lockedOrder, waitForTimeline } from "../payments/support/payments.ts";
import { syntheticIdentity } from "../../src/domain/payer-identity.ts";
import { sandboxAccounts } from "../../src/stack/local-node.ts";

// The operator console at /admin in a real headless Chromium, over a service on the real chain and
// indexer (decisions section 12): sign-in, the state chart with live counts, the order inspector, the
// dispute queue resolving on chain, the high-risk queue, partners, deliveries and revenue.
// Screenshots of each view go to test/console/screenshots/.

let stack: TradeStack;
let receiver: TestReceiver;
let browser: Browser;
let page: Page;
let completed: DisputedOrder;
let toResolve: DisputedOrder;
let stillDisputed: DisputedOrder;
let highRiskId: string;

const url = (hash = "") => `${stack.service.baseUrl}/admin${hash}`;

async function stats() {
  const response = await stack.service.admin<{ orders: { byStatus: Record<string, number> } }>("GET", "/stats");
  return response.body.orders.byStatus;
}

/** The number shown in each state node of the overview chart. */
async function chartCounts(): Promise<Record<string, number>> {
  const pairs = await page.$$eval("#overview-chart [data-state]", (nodes) => nodes.map((node) => [node.getAttribute("data-state"), Number(node.getAttribute("data-count"))] as const));
  return Object.fromEntries(pairs) as Record<string, number>;
}

/** Opens a view afresh (reloading when it is already the one shown) and waits for `selector`. */
async function go(hash: string, selector: string): Promise<void> {
  if (page.url() === url(hash)) await page.reload();
  else await page.goto(url(hash));
  await page.waitForSelector(selector);
}

before(async () => {
  receiver = await startReceiver();
  stack = await startTradeStack({}, { name: "Acme Wallet", webhookUrl: receiver.url, feeWallet: `0x${"fee".padStart(40, "0")}`, limits: { revenueSharePercent: 20 } });
  completed = await disputedOrder(stack, { by: "BUYER", buyerWallet: 1, feePercent: 1, feeRecipient: "PARTNER" });
  await resolve(stack, completed.id, "BUYER", "CEP proves the payment");
  await waitForAdminStatus(stack, completed.id, "COMPLETED");
  toResolve = await disputedOrder(stack, { by: "SELLER", buyerWallet: 2 });
  stillDisputed = await disputedOrder(stack, { by: "BUYER", buyerWallet: 3 });
  const active = await placeOrder(stack);
  assertStatus(await stack.service.api("POST", `/sandbox/orders/${active.id}/deposit`, { key: stack.partner.apiKey }), 200);
  await placeOrder(stack);
  // A politically exposed user's large order is HIGH risk (amount +30, PEP +30, new account +10).
  const kycPartner = await stack.service.createPartner({ name: "Beta Pay", tier: "GROWTH", kycModel: "SERVICE_PROVIDED" });
  assertStatus(await stack.service.api("POST", "/users", { key: kycPartner.apiKey, body: { partnerUserRef: "pep-user" } }), 201);
  const session = await startSession(stack.service, kycPartner.apiKey, "pep-user", "FULL");
  await decide(stack.service, kycPartner.apiKey, session.sessionId, "APPROVED", { isPep: true });
  highRiskId = (await placeOrder({ service: stack.service, partner: kycPartner }, { ref: "pep-user", amountUsdc: 6000 })).id;
  await waitForAdminStatus(stack, active.id, "ACTIVE");

  browser = await launchChromium();
  page = await browser.newPage();
});
after(async () => {
  await browser?.close();
  await stack?.close();
  await receiver?.close();
});

describe("signing in", () => {
  test("the console page is served without a token; the admin API behind it is not", async () => {
    const html = await fetch(url());
    assert.equal(html.status, 200);
    assert.match(html.headers.get("content-type") ?? "", /text\/html/);
    assert.match(html.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    assert.equal((await fetch(`${stack.service.baseUrl}/admin/v1/stats`)).status, 401);
  });

  test("a wrong token is refused and the console stays closed", async () => {
    await page.goto(url());
    await page.fill("#token", "not-the-admin-token");
    await page.click("#login-form button[type=submit]");
    await page.waitForSelector("#login-error:not([hidden])");
    assert.match(await page.textContent("#login-error") ?? "", /refused/);
    assert.equal(await page.isHidden("#app"), true);
    assert.equal(await page.evaluate(() => sessionStorage.getItem("offramp.adminToken")), null);
    await screenshot(page, "01-login-refused");
  });

  test("the admin token opens the console on the overview", async () => {
    await page.fill("#token", ADMIN_TOKEN);
    await page.click("#login-form button[type=submit]");
    await page.waitForSelector("#overview-chart svg");
    assert.equal(await page.isVisible("#app"), true);
    assert.equal(new URL(page.url()).hash, "#/overview");
  });
});

describe("overview", () => {
  test("the state chart has a node for every state of the machine definition and an edge for every transition", async () => {
    await go("#/overview", "#overview-chart [data-state]");
    const machine = (await stack.service.admin<{ states: { name: string }[]; transitions: { from: string; to: string; event: string }[] }>("GET", "/machine")).body;
    const nodes = await page.$$eval("#overview-chart [data-state]", (elements) => elements.map((element) => element.getAttribute("data-state")));
    assert.deepEqual([...nodes].sort(), machine.states.map((state) => state.name).sort());
    const edges = await page.$$eval("#overview-chart [data-edge]", (elements) => elements.map((element) => element.getAttribute("data-edge")));
    assert.deepEqual(edges.slice(1), machine.transitions.map((edge) => `${edge.from}>${edge.to}:${edge.event}`));
  });

  test("the overview shows each signing key's gas money, as GET /admin/v1/signers reads it", async () => {
    await go("#/overview", '#signer-balances [data-signer="arbiter"]');
    const shown = await page.$$eval("#signer-balances [data-signer]", (nodes) => nodes.map((node) => [node.getAttribute("data-signer"), node.getAttribute("data-low"), node.textContent]));
    assert.deepEqual(shown.map(([role, low]) => [role, low]), [["service", "false"], ["arbiter", "false"]]);
    assert.match(String(shown[0]![2]), /ETH OK$/);
  });

  test("each state shows the number of orders in it", async () => {
    await go("#/overview", "#overview-chart [data-state]");
    assert.deepEqual(await chartCounts(), await stats());
    assert.equal((await chartCounts()).DISPUTED, 2);
    await screenshot(page, "02-overview-chart");
  });

  test("the counts follow new orders without reloading the page", async () => {
    await go("#/overview", "#overview-chart [data-state]");
    const before = (await chartCounts()).PENDING_DEPOSIT!;
    await placeOrder(stack);
    await page.waitForFunction(
      (expected) => document.querySelector('#overview-chart [data-state="PENDING_DEPOSIT"]')?.getAttribute("data-count") === String(expected),
      before + 1,
      { timeout: 15_000 },
    );
    assert.equal(await page.textContent('#state-counts [data-count-for="PENDING_DEPOSIT"]'), String(before + 1));
  });

  test("clicking a state lists the orders in it", async () => {
    await go("#/overview", "#overview-chart [data-state]");
    await page.click('#overview-chart [data-state="DISPUTED"]');
    await page.waitForSelector("table.orders");
    assert.equal(new URL(page.url()).hash, "#/orders?status=DISPUTED");
    const ids = await page.$$eval("table.orders tbody tr", (rows) => rows.map((row) => row.getAttribute("data-order-id")));
    assert.deepEqual([...ids].sort(), [toResolve.id, stillDisputed.id].sort());
  });
});

describe("order inspector", () => {
  test("the order's path is highlighted on the chart: states it went through, the current one, the edges it took", async () => {
    await go(`#/orders/${completed.id}`, "#order-chart [data-state]");
    assert.equal(await page.textContent("#order-path"), "PENDING_DEPOSIT → ACTIVE → LOCKED → DISPUTED → COMPLETED");
    const classes = Object.fromEntries(
      await page.$$eval("#order-chart [data-state]", (nodes) => nodes.map((node) => [node.getAttribute("data-state"), node.getAttribute("class") ?? ""] as const)),
    ) as Record<string, string>;
    for (const state of ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "DISPUTED"]) assert.match(classes[state]!, /\bvisited\b/, state);
    assert.match(classes.COMPLETED!, /\bcurrent\b/);
    for (const state of ["PENDING_RELEASE", "EXPIRED", "REFUNDED"]) assert.doesNotMatch(classes[state]!, /\b(visited|current)\b/, state);
    const taken = await page.$$eval("#order-chart [data-taken]", (edges) => edges.map((edge) => edge.getAttribute("data-edge")));
    assert.deepEqual(taken, [
      "start>PENDING_DEPOSIT",
      "PENDING_DEPOSIT>ACTIVE:DEPOSIT_CONFIRMED",
      "ACTIVE>LOCKED:LOCKED",
      "LOCKED>DISPUTED:DISPUTE_OPENED",
      "DISPUTED>COMPLETED:RELEASED",
    ]);
    await screenshot(page, "03-order-inspector");
  });

  test("the inspector shows the timeline, the webhook deliveries and the transaction hashes", async () => {
    await go(`#/orders/${completed.id}`, "#timeline tbody tr");
    const detail = await adminOrder(stack, completed.id);
    const events = await page.$$eval("#timeline tbody tr td:nth-child(2)", (cells) => cells.map((cell) => cell.textContent));
    assert.deepEqual(events, detail.timeline.map((entry) => entry.event));
    const deliveries = await page.$$eval("#order-deliveries tbody tr", (rows) => rows.map((row) => row.getAttribute("data-delivery-id")));
    assert.deepEqual(deliveries, detail.deliveries.map((delivery) => delivery.id));
    assert.deepEqual(await page.$$eval("#transactions .tx-hash", (cells) => cells.map((cell) => cell.textContent)), [detail.transactions[0]!.txHash]);
    assert.match(await page.textContent("#dispute-panel") ?? "", /CEP proves the payment/);
  });
});

describe("dispute queue", () => {
  test("lists the open disputes with the five outcomes", async () => {
    await go("#/disputes", "#dispute-queue article");
    const ids = await page.$$eval("#dispute-queue article", (articles) => articles.map((article) => article.getAttribute("data-order-id")));
    assert.deepEqual([...ids].sort(), [toResolve.id, stillDisputed.id].sort());
    const outcomes = await page.$$eval(`#dispute-queue article[data-order-id="${toResolve.id}"] input[type=radio]`, (inputs) => inputs.map((input) => (input as HTMLInputElement).value));
    assert.deepEqual(outcomes, ["BUYER", "SELLER", "NO_FAULT_RELEASE", "NO_FAULT_REFUND", "NO_FAULT_RETRY"]);
  });

  test("resolving from the queue sends the chosen outcome with the note, and the order follows the chain to REFUNDED", async () => {
    await go("#/disputes", `#dispute-queue article[data-order-id="${toResolve.id}"]`);
    const card = `#dispute-queue article[data-order-id="${toResolve.id}"]`;
    await page.check(`${card} input[value="SELLER"]`);
    await page.fill(`${card} textarea`, "No SPEI payment reached the seller's CLABE");
    await screenshot(page, "04-dispute-queue");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`${card} button[type=submit]`);
    await page.waitForSelector("#notice:not([hidden])");
    assert.match(await page.textContent("#notice") ?? "", /Resolution SELLER sent/);
    const detail = await waitForAdminStatus(stack, toResolve.id, "REFUNDED");
    assert.deepEqual(
      detail.timeline.find((entry) => entry.event === "DISPUTE_RESOLUTION_REQUESTED")?.data,
      { outcome: "SELLER", note: "No SPEI payment reached the seller's CLABE" },
    );
    const sent = await waitForSettled("the resolution", async () => (await adminOrder(stack, toResolve.id)).transactions);
    assert.deepEqual(sent.map((tx) => [tx.action, tx.params.outcome, tx.status]), [["resolveDispute", "SELLER", "MINED"]]);
  });

  test("the resolved order leaves the queue and its inspector shows it REFUNDED", async () => {
    await go("#/disputes", "#dispute-queue article");
    const ids = await page.$$eval("#dispute-queue article", (articles) => articles.map((article) => article.getAttribute("data-order-id")));
    assert.deepEqual(ids, [stillDisputed.id]);
    await go(`#/orders/${toResolve.id}`, "#order-chart [data-state]");
    assert.equal(await page.textContent("#order-status"), "REFUNDED");
    assert.equal(await page.textContent("#order-path"), "PENDING_DEPOSIT → ACTIVE → LOCKED → DISPUTED → REFUNDED");
    await screenshot(page, "05-order-resolved");
  });

  test("an open inspector follows the order when it is resolved elsewhere", async () => {
    await go(`#/orders/${stillDisputed.id}`, "#dispute-panel form");
    await resolve(stack, stillDisputed.id, "NO_FAULT_RETRY", "portal outage");
    await page.waitForFunction(() => document.querySelector("#order-status")?.textContent === "LOCKED", undefined, { timeout: 20_000 });
    assert.match(await page.textContent("#order-path") ?? "", /DISPUTED → LOCKED$/);
  });
});

describe("high-risk queue", () => {
  test("lists the HIGH-risk orders", async () => {
    await go("#/high-risk", "#high-risk-queue table.orders");
    const ids = await page.$$eval("#high-risk-queue tbody tr", (rows) => rows.map((row) => row.getAttribute("data-order-id")));
    assert.deepEqual(ids, [highRiskId]);
    assert.equal(await page.textContent("#badge-high-risk"), "1");
    await screenshot(page, "06-high-risk");
  });

  test("lists a third-party payment with the payer beside the buyer's verified identity; Release completes it", async () => {
    const order = await lockedOrder(stack, { buyerWallet: 4 });
    assertStatus(await stack.service.api("POST", `/sandbox/orders/${order.id}/pay`, { key: stack.partner.apiKey, body: { payerName: "ROSA ELENA QUIROZ LUNA", payerRfc: "QULR850312HJ4" } }), 200);
    await waitForTimeline(stack, order.id, "THIRD_PARTY_PAYMENT");
    const card = `#third-party-payment-queue article[data-order-id="${order.id}"]`;
    await go("#/high-risk", card);
    const columns = await page.$$eval(`${card} .identity`, (nodes) => nodes.map((node) => node.textContent ?? ""));
    assert.equal(columns.length, 2);
    assert.match(columns[0]!, /ROSA ELENA QUIROZ LUNA.*QULR850312HJ4/s);
    assert.match(columns[1]!, new RegExp(syntheticIdentity(sandboxAccounts[4]!.address.toLowerCase()).name));
    await screenshot(page, "06b-third-party-payment");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`${card} .hold-actions button:has-text("Release to the buyer")`);
    await waitForAdminStatus(stack, order.id, "COMPLETED");
  });
});

describe("partners", () => {
  let partnerId: string;
  let firstKey: string;

  test("creating a partner shows its API key and webhook secret once, and the key works", async () => {
    await go("#/partners", "#partner-table table");
    await page.fill("#partner-name", "Console Partner");
    await page.selectOption("#partner-tier", "GROWTH");
    await page.click("#partner-create button[type=submit]");
    await page.waitForSelector("#secret-notice [data-secret=apiKey]");
    firstKey = (await page.textContent("#secret-notice [data-secret=apiKey]")) ?? "";
    assert.match(firstKey, /^ofrk_[0-9a-f]{64}$/);
    assert.match((await page.textContent("#secret-notice [data-secret=webhookSecret]")) ?? "", /^whsec_[0-9a-f]{64}$/);
    const health = await stack.service.api("GET", "/health", { key: firstKey });
    assertStatus(health, 200);
    assert.equal(health.body.partner, "Console Partner");
    const partners = await stack.service.admin<{ partners: { id: string; name: string }[] }>("GET", "/partners?limit=100");
    partnerId = partners.body.partners.find((partner) => partner.name === "Console Partner")!.id;
    await page.waitForSelector(`#partner-table tr[data-partner-id="${partnerId}"]`);
    await screenshot(page, "07-partners");
  });

  test("rotating the key shows the new key; the old one stops working", async () => {
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`#partner-table tr[data-partner-id="${partnerId}"] button.danger`);
    await page.waitForFunction((old) => {
      const shown = document.querySelector("#secret-notice [data-secret=apiKey]")?.textContent;
      return shown !== undefined && shown !== old;
    }, firstKey);
    const newKey = (await page.textContent("#secret-notice [data-secret=apiKey]")) ?? "";
    assert.equal((await stack.service.api("GET", "/health", { key: firstKey })).status, 401);
    assertStatus(await stack.service.api("GET", "/health", { key: newKey }), 200);
  });

  test("changing the tier and deactivating update the partner", async () => {
    const row = `#partner-table tr[data-partner-id="${partnerId}"]`;
    await page.selectOption(`${row} select`, "ENTERPRISE");
    await waitFor("the tier change", async () => ((await stack.service.admin<{ tier: string }>("GET", `/partners/${partnerId}`)).body.tier === "ENTERPRISE" ? true : undefined));
    await page.click(`${row} button:has-text("Deactivate")`);
    await waitFor("the deactivation", async () => ((await stack.service.admin<{ status: string }>("GET", `/partners/${partnerId}`)).body.status === "INACTIVE" ? true : undefined));
    await page.waitForSelector(`${row} button:has-text("Activate")`);
  });
});

describe("deliveries", () => {
  test("redelivering from the list starts a new attempt series that reaches the endpoint", async () => {
    const detail = await adminOrder(stack, completed.id);
    const delivery = detail.deliveries.find((candidate) => candidate.eventType === "order.dispute_resolved")!;
    await go(`#/deliveries?orderId=${completed.id}`, `#delivery-table tr[data-delivery-id="${delivery.id}"]`);
    await screenshot(page, "08-deliveries");
    await page.click(`#delivery-table tr[data-delivery-id="${delivery.id}"] button`);
    await page.waitForSelector("#notice:not([hidden])");
    const record = await stack.service.admin<{ series: number }>("GET", `/deliveries/${delivery.id}`);
    assert.equal(record.body.series, 2);
    await waitFor("the redelivered webhook", async () => (receiver.requests.filter((request) => request.headers["x-webhook-id"] === delivery.id).length >= 2 ? true : undefined));
  });
});

describe("revenue", () => {
  test("the month's table shows each partner's completed volume, fees and the service's share", async () => {
    await go("#/revenue", `#revenue-table tr[data-partner-id="${stack.partner.id}"]`);
    const report = (await stack.service.admin<{ partners: { partnerId: string; completedOrders: number }[] }>("GET", "/revenue")).body;
    const row = report.partners.find((candidate) => candidate.partnerId === stack.partner.id)!;
    const cells = await page.$$eval(`#revenue-table tr[data-partner-id="${stack.partner.id}"] td`, (tds) => tds.map((td) => td.textContent));
    assert.equal(cells[0], "Acme Wallet");
    assert.equal(cells[2], String(row.completedOrders));
    await screenshot(page, "09-revenue");
  });
});

describe("signing out", () => {
  test("signing out forgets the token, and a reload asks for it again", async () => {
    await go("#/overview", "#overview-chart svg");
    await page.click("#logout");
    await page.waitForSelector("#login:not([hidden])");
    assert.equal(await page.evaluate(() => sessionStorage.getItem("offramp.adminToken")), null);
    await page.reload();
    await page.waitForSelector("#login:not([hidden])");
    assert.equal(await page.isHidden("#app"), true);
  });

  test("no page raised a script error", () => {
    assert.deepEqual(
      browser.errors.filter((error) => !error.includes("401")),
      [],
    );
  });
});
