import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { signWebhook } from "../../src/webhooks/signature.ts";
import { launchChromium, type Browser } from "../console/browser.ts";
import { assertError, assertStatus } from "../support/assertions.ts";
import { ADMIN_TOKEN, type TestService } from "../support/service.ts";
import { placeOrder, startOfflineOrderService } from "../support/trade-stack.ts";
import { startReceiver, waitFor, type TestReceiver } from "../webhooks/support/receiver.ts";

// The partner dashboard at /dashboard in a real headless Chromium (decisions section 18): an owner joins
// through an invitation link, reads the overview, rotates the API key and uses the new key against the
// API, sets the webhook and receives the signed test event, reads and redelivers from the delivery log,
// changes the IP allow-list and sees a request refused, reads orders with their timeline, invites a member
// and reads the audit log; a VIEWER sees no change control anywhere. A screenshot of each page goes to
// test/dashboard/screenshots/ (not kept in git: look at them).

const SCREENSHOT_DIR = fileURLToPath(new URL("./screenshots/", import.meta.url));
const OWNER_PASSWORD = "owner password 123";

let service: TestService;
let receiver: TestReceiver;
let browser: Browser;
let page: Page;
let partner: { id: string; apiKey: string; webhookSecret: string };
let orderId: string;

async function screenshot(name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** Opens a view (reloading it when already shown) and waits until it has drawn. */
async function go(hash: string, view: string): Promise<void> {
  const url = `${service.baseUrl}/dashboard#${hash}`;
  if (page.url() === url) await page.reload();
  else await page.goto(url);
  await page.waitForSelector(`#view[data-ready="${view}"]`);
}

before(async () => {
  receiver = await startReceiver();
  service = await startOfflineOrderService();
  partner = await service.createPartner({ name: "Acme Wallet", tier: "GROWTH", webhookUrl: receiver.url });
  orderId = (await placeOrder({ service, partner }, { ref: "maria", amountUsdc: 250 })).id;
  await placeOrder({ service, partner }, { ref: "juan", amountUsdc: 40 });
  browser = await launchChromium();
  page = await browser.newPage();
  page.on("dialog", (dialog) => void dialog.accept());
});
after(async () => {
  await browser?.close();
  await service?.close();
  await receiver?.close();
});

describe("the dashboard page", () => {
  test("is served with a strict CSP: scripts and styles from this origin only, nothing inline", async () => {
    const response = await fetch(`${service.baseUrl}/dashboard`);
    assert.equal(response.status, 200);
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /style-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal((await fetch(`${service.baseUrl}/dashboard/assets/nope.js`)).status, 404);
  });

  test("an owner joins through the invitation link and lands on the overview with limits and usage bars", async () => {
    const invited = await service.admin<{ inviteUrl: string }>("POST", `/partners/${partner.id}/members`, { email: "owner@acme.example", role: "OWNER" });
    await page.goto(invited.body.inviteUrl);
    await page.waitForSelector("#invitation-form");
    await screenshot("00-invitation");
    await page.fill("#new-password", OWNER_PASSWORD);
    await page.click("#invitation-form button[type=submit]");
    await page.waitForSelector('#view[data-ready="overview"]');
    assert.match(await page.textContent("#who") ?? "", /owner@acme\.example · OWNER/);
    assert.equal(await page.textContent('[data-field="tier"]'), "GROWTH");
    assert.match(await page.textContent('[data-usage="users"]') ?? "", /^2 of 500$/);
    assert.match(await page.textContent('[data-usage="kyc"]') ?? "", /^0 of 1,000$/);
    assert.equal(await page.locator("#usage .bar").count(), 5);
    const usage = (await (await page.request.get(`${service.baseUrl}/dashboard/v1/usage`)).json()) as { volume: { dayMxn: number } };
    assert.ok(usage.volume.dayMxn > 0);
    await screenshot("01-overview");
  });

  test("signing out and in again with the email and password", async () => {
    await page.click("#logout");
    await page.waitForSelector("#login-form");
    await page.fill("#email", "owner@acme.example");
    await page.fill("#password", "not the password");
    await page.click("#login-form button[type=submit]");
    // "Signed out." is shown already: wait for the refusal itself.
    await page.waitForSelector("#login-error:has-text('The email or password is wrong.')");
    await page.waitForSelector("#login-form button[type=submit]:enabled");
    await screenshot("02-sign-in-refused");
    await page.fill("#email", "owner@acme.example");
    await page.fill("#password", OWNER_PASSWORD);
    await page.click("#login-form button[type=submit]");
    await page.waitForSelector('#view[data-ready="overview"]');
    const cookies = await browser.context.cookies();
    const session = cookies.find((cookie) => cookie.name === "offramp_dashboard")!;
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, "Strict");
    assert.equal(await page.evaluate(() => document.cookie), "", "the page's script cannot read the session cookie");
  });

  test("rotating the API key shows the new key once; it works against the API and the old key is refused", async () => {
    await go("/api-key", "api-key");
    assert.equal(await page.textContent("#key-prefix"), `${partner.apiKey.slice(0, 13)}…`);
    await page.click("text=Rotate API key");
    const newKey = (await page.locator('[data-secret="apiKey"]').textContent())!;
    assert.match(newKey, /^ofrk_[0-9a-f]{64}$/);
    await screenshot("03-api-key");
    assertStatus(await service.api("GET", "/health", { key: newKey }), 200);
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 401, "INVALID_API_KEY");
    partner.apiKey = newKey;
    await go("/api-key", "api-key");
    assert.equal(await page.locator('[data-secret="apiKey"]').count(), 0, "shown once: not after a reload");
  });

  test("setting the webhook, rotating its secret and sending the test event: the receiver gets webhook.test signed with the new secret", async () => {
    const hook = await startReceiver();
    try {
      await go("/webhook", "webhook");
      await page.fill("#webhook-url", hook.url);
      await page.click("#webhook-form button[type=submit]");
      await page.waitForSelector("#notice:not([hidden])");
      await page.click("text=Rotate webhook secret");
      const secret = (await page.locator('[data-secret="webhookSecret"]').textContent())!;
      assert.match(secret, /^whsec_[0-9a-f]{64}$/);
      await page.click("text=Send test event");
      await page.waitForSelector('#test-outcome [data-delivered="true"]');
      assert.equal(await page.textContent('#test-outcome [data-field="statusCode"]'), "200");
      const received = hook.requests.at(-1)!;
      const payload = JSON.parse(received.rawBody) as { event: string; data: { partnerId: string } };
      assert.equal(payload.event, "webhook.test");
      assert.deepEqual(payload.data, { partnerId: partner.id });
      assert.equal(received.headers["x-webhook-signature"], signWebhook(secret, Number(received.headers["x-webhook-timestamp"]), received.rawBody));
      await screenshot("04-webhook");
    } finally {
      await hook.close();
    }
    await page.fill("#webhook-url", receiver.url);
    await page.click("#webhook-form button[type=submit]");
    await waitFor("the URL saved", async () => (await service.admin<{ webhookUrl: string }>("GET", `/partners/${partner.id}`)).body.webhookUrl === receiver.url);
  });

  test("the delivery log: filter, each attempt's status code, duration and error, and redeliver", async () => {
    await waitFor("deliveries delivered", async () => {
      const list = await service.api<{ deliveries: { status: string }[] }>("GET", "/webhooks?status=DELIVERED", { key: partner.apiKey });
      return list.body.deliveries.length >= 2;
    });
    await go(`/webhook?orderId=${orderId}`, "webhook");
    const rows = page.locator("#delivery-table tr[data-delivery-id]");
    assert.equal(await rows.count(), 1);
    const deliveryId = (await rows.first().getAttribute("data-delivery-id"))!;
    await rows.first().locator("text=Attempts").click();
    await page.waitForSelector(`tr[data-attempts-of="${deliveryId}"]:not([hidden]) td[data-field="statusCode"]`);
    assert.equal(await page.textContent(`tr[data-attempts-of="${deliveryId}"] td[data-field="statusCode"]`), "200");
    await screenshot("05-delivery-log");
    const before = receiver.requests.filter((request) => request.headers["x-webhook-id"] === deliveryId).length;
    await rows.first().locator("text=Redeliver").click();
    await waitFor("the redelivery", () => receiver.requests.filter((request) => request.headers["x-webhook-id"] === deliveryId).length > before);
    await go("/webhook?status=FAILED", "webhook");
    assert.equal(await page.locator("#delivery-table tr[data-delivery-id]").count(), 0);
  });

  test("changing the IP allow-list: a request with the key from an address not on it is refused", async () => {
    await go("/ip-allow-list", "ip-allow-list");
    await page.fill("#allow-list", "10.0.0.0/8\n2001:db8::/32");
    await page.click("text=Save allow-list");
    await page.waitForSelector('#view[data-ready="ip-allow-list"] #allow-list-current code');
    assertError(await service.api("GET", "/health", { key: partner.apiKey }), 403, "IP_NOT_ALLOWED");
    await screenshot("06-ip-allow-list");
    await page.fill("#allow-list", "");
    await page.click("text=Save allow-list");
    await waitFor("the allow-list cleared", async () => (await service.api("GET", "/health", { key: partner.apiKey })).status === 200);
  });

  test("orders and one order's timeline", async () => {
    await go("/orders", "orders");
    assert.equal(await page.locator("#order-table tr[data-order-id]").count(), 2);
    await screenshot("07-orders");
    await page.click(`a[href="#/orders/${orderId}"]`);
    await page.waitForSelector('#view[data-ready="orders"] #timeline li');
    assert.ok((await page.locator('#timeline li[data-event="CREATED"]').count()) === 1);
    await screenshot("08-order");
  });

  test("members: an owner invites a VIEWER and gets the invitation link once", async () => {
    await go("/members", "members");
    await page.fill("#invite-email", "viewer@acme.example");
    await page.selectOption("#invite-role", "VIEWER");
    await page.click("#invite-form button[type=submit]");
    await page.waitForSelector('[data-secret="inviteUrl"]');
    await page.waitForSelector("#member-table tr >> text=viewer@acme.example");
    await screenshot("09-members");
  });

  test("the audit log shows the changes made here and by operators", async () => {
    assertStatus(await service.admin("PATCH", `/partners/${partner.id}`, { feeWallet: `0x${"ab".repeat(20)}` }), 200);
    await go("/audit-log", "audit-log");
    for (const action of ["api_key.rotated", "webhook_url.updated", "webhook_secret.rotated", "ip_allow_list.updated", "member.invited", "delivery.redelivered", "member.joined", "partner.updated"]) {
      assert.ok((await page.locator(`#audit-table tr[data-action="${action}"]`).count()) >= 1, action);
    }
    assert.match((await page.textContent('#audit-table tr[data-action="partner.updated"]')) ?? "", /Offramp operator/);
    const text = (await page.textContent("#audit-table")) ?? "";
    assert.doesNotMatch(text, /ofrk_[0-9a-f]{64}|whsec_/, "never a key or a secret (the key's 13-character prefix is shown)");
    await screenshot("10-audit-log");
  });

  test("a VIEWER sees no change buttons on any page", async () => {
    const members = (await (await page.request.get(`${service.baseUrl}/dashboard/v1/members`)).json()) as { members: { email: string; status: string }[] };
    assert.equal(members.members.find((member) => member.email === "viewer@acme.example")!.status, "INVITED");
    const invited = await service.admin<{ inviteUrl: string }>("POST", `/partners/${partner.id}/members`, { email: "viewer2@acme.example", role: "VIEWER" });
    await page.click("#logout");
    await page.waitForSelector("#login-form");
    await page.goto(invited.body.inviteUrl);
    await page.fill("#new-password", "viewer password 1");
    await page.click("#invitation-form button[type=submit]");
    await page.waitForSelector('#view[data-ready="overview"]');
    assert.match((await page.textContent("#who")) ?? "", /VIEWER/);
    for (const [hash, view] of [["/overview", "overview"], ["/api-key", "api-key"], ["/webhook", "webhook"], ["/ip-allow-list", "ip-allow-list"], ["/orders", "orders"], [`/orders/${orderId}`, "orders"], ["/members", "members"], ["/audit-log", "audit-log"]] as const) {
      await go(hash, view);
      assert.equal(await page.locator("#view [data-change]").count(), 0, `${hash}: no change control`);
      for (const label of ["Rotate", "Save", "Send test", "Redeliver", "Invite", "Remove"]) {
        assert.equal(await page.locator(`#view button:has-text("${label}")`).count(), 0, `${hash}: no ${label} button`);
      }
      if (hash === "/webhook") await screenshot("11-viewer-webhook");
      if (hash === "/members") await screenshot("12-viewer-members");
    }
  });

  test("the operator console shows the same audit log", async () => {
    const consolePage = await browser.newPage();
    await consolePage.goto(`${service.baseUrl}/admin`);
    await consolePage.fill("#token", ADMIN_TOKEN);
    await consolePage.click("#login-form button[type=submit]");
    await consolePage.waitForSelector("#app:not([hidden])");
    await consolePage.goto(`${service.baseUrl}/admin#/audit?partnerId=${partner.id}`);
    await consolePage.waitForSelector('#audit-table tr[data-action="api_key.rotated"]');
    const shown = await consolePage.locator("#audit-table tr[data-action]").count();
    const log = await service.admin<{ total: number }>("GET", `/partners/${partner.id}/audit-log`);
    assert.equal(shown, log.body.total);
    assert.match((await consolePage.textContent('#audit-table tr[data-action="ip_allow_list.updated"]')) ?? "", /owner@acme\.example \(member\)/);
    await consolePage.screenshot({ path: path.join(SCREENSHOT_DIR, "13-console-audit-log.png"), fullPage: true });
    await consolePage.close();
  });

  test("no script error and no CSP violation on any page", () => {
    assert.deepEqual(browser.errors.filter((error) => !/status of 40[134]/.test(error)), []);
  });
});
