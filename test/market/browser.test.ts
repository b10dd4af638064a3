// The market page at /market in a real headless Chromium (playwright-core, as the console's tests), over
// a service on the real chain and indexer. A test wallet is injected into the page as an EIP-1193
// provider (window.ethereum) whose keys stay in the test process: the page connects it, signs in,
// sees the order book, locks an order with the wallet's own transaction, shows where and how much to
// pay, reports the (simulated) SPEI payment and follows the trade to COMPLETED.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { createWalletClient, http, type Hex } from "viem";
import { launchChromium, screenshot, type Browser } from "../console/browser.ts";
import { startTradeStack, waitForStatus, type TradeStack } from "../support/trade-stack.ts";
import { activeOrder, fund, market, newWallet, signIn } from "./support.ts";

let stack: TradeStack;
let browser: Browser;
let page: Page;
const account = newWallet();

/** The injected wallet: requests from the page answered by the test's key and the local chain. */
async function injectWallet(target: Page) {
  const gateway = stack.service.chain!.gateway;
  const client = createWalletClient({ account, chain: gateway.chain, transport: http(stack.chainSettings.rpcUrl) });
  await target.exposeFunction("__testWallet", async (method: string, params: unknown[]) => {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [account.address];
      case "eth_chainId":
        return `0x${gateway.chain.id.toString(16)}`;
      case "personal_sign":
        return account.signMessage({ message: { raw: params[0] as Hex } });
      case "eth_sendTransaction": {
        const tx = params[0] as { to: Hex; data: Hex; value?: Hex };
        return client.sendTransaction({ to: tx.to, data: tx.data, ...(tx.value ? { value: BigInt(tx.value) } : {}) });
      }
      default:
        throw new Error(`test wallet: ${method} is not supported`);
    }
  });
  await target.addInitScript(() => {
    const bridge = (window as unknown as { __testWallet: (method: string, params: unknown[]) => Promise<unknown> }).__testWallet;
    (window as unknown as { ethereum: unknown }).ethereum = {
      isTestWallet: true,
      request: ({ method, params }: { method: string; params?: unknown[] }) => bridge(method, params ?? []),
      on: () => undefined,
      removeListener: () => undefined,
    };
  });
}

before(async () => {
  stack = await startTradeStack();
  browser = await launchChromium();
  page = await browser.newPage();
  await injectWallet(page);
  await fund(stack, account.address, { eth: 1, usdc: 0 });
});
after(async () => {
  await browser?.close();
  await stack?.close();
});

test("the page is served with a strict content security policy", async () => {
  const response = await fetch(`${stack.service.baseUrl}/market`);
  assert.equal(response.status, 200);
  const csp = response.headers.get("content-security-policy") ?? "";
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  assert.equal((await fetch(`${stack.service.baseUrl}/market/assets/market.js`)).status, 200);
  assert.equal((await fetch(`${stack.service.baseUrl}/market/assets/..%2Fauth.ts`)).status, 404);
});

test("connect, sign in, verify, lock from the book, pay, report and follow the trade to COMPLETED", async () => {
  const order = await activeOrder(stack, 25);
  const started = Date.now();
  await page.goto(`${stack.service.baseUrl}/market`);
  // The book is public: listed before a wallet connects.
  await page.waitForSelector(`#book-rows tr[data-order="${order.escrowOrderId}"]`);
  await screenshot(page, "market-public-book");
  await page.click("#connect");
  await page.waitForSelector("#sign-in:not([hidden])");
  await page.click("#sign-in");
  await page.waitForSelector("#profile:not([hidden])");
  assert.equal(await page.textContent("#wallet"), account.address);
  await page.waitForSelector(`#book-rows tr[data-order="${order.escrowOrderId}"]`);
  await screenshot(page, "market-book");

  // KYC first (a new buyer holds no level): the provider's session, approved in sandbox.
  await page.click("#kyc-start");
  await page.waitForSelector("#kyc-approve:not([hidden])");
  await page.click("#kyc-approve");
  await page.waitForFunction(() => document.querySelector('[data-field="kyc"]')?.textContent === "APPROVED (BASIC)");

  await page.click(`#book-rows tr[data-order="${order.escrowOrderId}"] button.lock`);
  await page.waitForSelector("#pay:not([hidden])", { timeout: 30_000 });
  assert.equal(await page.textContent('[data-field="concept"]'), order.paymentConcept);
  assert.equal(await page.textContent('[data-field="clabe"]'), String((order.bankAccount as Record<string, unknown>).clabe));
  assert.match((await page.textContent('[data-field="amountMxn"]')) ?? "", new RegExp(order.totalMxn.toLocaleString("en-US", { minimumFractionDigits: 2 })));
  await screenshot(page, "market-locked");
  await waitForStatus(stack, order.id, "LOCKED");

  await page.click("#spei-simulate");
  await page.waitForFunction(() => (document.getElementById("report-key") as HTMLInputElement).value !== "");
  await page.click("#report-send");
  await page.waitForFunction(() => document.getElementById("trade-status")?.textContent === "COMPLETED", undefined, { timeout: 60_000 });
  console.log(`# market page trade, book to COMPLETED: ${Date.now() - started} ms (KYC included)`);
  await screenshot(page, "market-completed");
  await waitForStatus(stack, order.id, "COMPLETED");
  await page.waitForFunction(() => document.querySelector('[data-field="completedTrades"]')?.textContent === "1");
  const buyer = await signIn(stack, account);
  assert.equal((await market(stack, "GET", "/me", { token: buyer.token })).body.completedTrades, 1);
  assert.deepEqual(browser.errors.filter((error) => !error.includes("404")), []);
});

test("signing out forgets the token", async () => {
  await page.click("#sign-out");
  await page.waitForSelector("#intro:not([hidden])");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("offramp-market-token")), null);
});
