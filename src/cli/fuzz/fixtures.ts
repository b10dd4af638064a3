// The data the fuzzer aims at, created through the API as a partner and an operator would: partners of
// each tier and state, users, unused quotes, orders in several states, KYC sessions, deliveries.
import { setTimeout as sleep } from "node:timers/promises";
import { withCheckDigit } from "../../domain/clabe.ts";

export const SELLER_CLABE = withCheckDigit("01218000118359719");
/** Where partner fees go (Hardhat development account 9; any address does). */
const FEE_WALLET = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";

type Json = Record<string, unknown>;

export interface PartnerFixture {
  label: string;
  id: string;
  apiKey: string;
  tier: string;
  kycModel: string;
  refs: string[];
  userIds: string[];
  orders: { id: string; status: string }[];
  quotes: string[];
  kycSessions: string[];
}

export interface Fixtures {
  /** main and other: the two tenants most traffic uses; growth and free: tier limits; the rest are refused. */
  partners: Record<"main" | "other" | "growth" | "free" | "inactive" | "suspended" | "ipBlocked", PartnerFixture>;
  /** A key that was rotated out (must be refused). */
  revokedKey: string;
  /** Partners the admin API may change freely (status, tier, keys) without touching the traffic's partners. */
  adminTargets: string[];
  deliveries: string[];
  wallets: string[];
  webhookUrl: string;
}

export interface FixtureClient {
  admin<T = Json>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  api<T = Json>(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
}

export function fixtureClient(baseUrl: string, adminToken: string, prefixes = { partner: "/api/v1", admin: "/admin/v1" }): FixtureClient {
  const call = async <T>(url: string, method: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: response.status, body: parsed as T };
  };
  return {
    admin: (method, path, body) => call(`${baseUrl}${prefixes.admin}${path}`, method, { authorization: `Bearer ${adminToken}` }, body),
    api: (key, method, path, body) => call(`${baseUrl}${prefixes.partner}${path}`, method, { "x-api-key": key }, body),
  };
}

function expect<T>(what: string, response: { status: number; body: T }, ...statuses: number[]): T {
  if (!statuses.includes(response.status)) throw new Error(`fixture ${what}: ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
  return response.body;
}

async function waitForStatus(client: FixtureClient, key: string, orderId: string, statuses: string[], timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const detail = await client.api<{ status: string }>(key, "GET", `/orders/${orderId}`);
    if (statuses.includes(detail.body.status)) return detail.body.status;
    if (Date.now() > deadline) throw new Error(`fixture order ${orderId} stayed ${detail.body.status}, waited for ${statuses.join("/")}`);
    await sleep(200);
  }
}

export async function createFixtures(
  client: FixtureClient,
  options: { tag: string; webhookUrl: string; log: (line: string) => void; orders?: boolean },
): Promise<Fixtures> {
  const { tag, webhookUrl, log } = options;
  const partner = async (label: string, fields: Json): Promise<PartnerFixture> => {
    const created = expect(
      `partner ${label}`,
      await client.admin<{ id: string; apiKey: string; tier: string; kycModel: string }>("POST", "/partners", { name: `fuzz ${tag} ${label}`, webhookUrl, feeWallet: FEE_WALLET, ...fields }),
      201,
    );
    return { label, id: created.id, apiKey: created.apiKey, tier: created.tier, kycModel: created.kycModel, refs: [], userIds: [], orders: [], quotes: [], kycSessions: [] };
  };
  const unlimited = { requestsPerMinute: 100_000 };
  const main = await partner("main", { tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", limits: unlimited });
  const other = await partner("other", { tier: "ENTERPRISE", kycModel: "SERVICE_PROVIDED", limits: unlimited });
  const growth = await partner("growth", { tier: "GROWTH", kycModel: "PARTNER_MANAGED" });
  const free = await partner("free", { tier: "FREE", kycModel: "SERVICE_PROVIDED" });
  const inactive = await partner("inactive", { tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED" });
  const suspended = await partner("suspended", { tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED" });
  const ipBlocked = await partner("ipBlocked", { tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", ipAllowList: ["203.0.113.7", "2001:db8::/32"] });
  const rotated = await partner("rotated", { tier: "FREE", kycModel: "PARTNER_MANAGED" });
  const adminTargets = [(await partner("admin-target-1", { tier: "FREE", kycModel: "PARTNER_MANAGED" })).id, (await partner("admin-target-2", { tier: "GROWTH", kycModel: "SERVICE_PROVIDED" })).id];

  // Users first (an inactive or suspended partner cannot create them).
  const users = async (p: PartnerFixture, count: number) => {
    for (let i = 0; i < count; i += 1) {
      const ref = `${tag}-${p.label}-u${i}`;
      const body: Json = { partnerUserRef: ref, email: `${p.label}${i}@example.com` };
      if (p.kycModel === "PARTNER_MANAGED") body.kycAttestation = { level: "FULL", verifiedAt: new Date(Date.now() - 86_400_000).toISOString() };
      const user = expect(`user ${ref}`, await client.api<{ id: string }>(p.apiKey, "POST", "/users", body), 201);
      p.refs.push(ref);
      p.userIds.push(user.id);
    }
  };
  await users(main, 5);
  await users(other, 4);
  await users(growth, 2);
  await users(free, 2);
  await users(inactive, 1);
  await users(suspended, 1);
  expect("deactivate", await client.admin("PATCH", `/partners/${inactive.id}`, { status: "INACTIVE" }), 200);
  expect("suspend", await client.admin("PATCH", `/partners/${suspended.id}`, { kybStatus: "SUSPENDED" }), 200);
  const revokedKey = rotated.apiKey;
  expect("rotate", await client.admin("POST", `/partners/${rotated.id}/api-keys`), 201);

  const quote = async (p: PartnerFixture, ref: string, amountUsdc: number) =>
    expect(`quote for ${ref}`, await client.api<{ id: string }>(p.apiKey, "POST", "/quotes", { type: "SELL", amountUsdc, partnerUserRef: ref, feePercent: 1, feeRecipient: "PARTNER" }), 201).id;
  const order = async (p: PartnerFixture, ref: string) => {
    const quoteId = await quote(p, ref, 10 + p.orders.length);
    const created = expect(`order for ${ref}`, await client.api<{ id: string }>(p.apiKey, "POST", "/orders", { quoteId, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 201);
    const fixture = { id: created.id, status: "PENDING_DEPOSIT" };
    p.orders.push(fixture);
    return fixture;
  };
  const sandbox = async (p: PartnerFixture, orderId: string, action: string, body: Json = {}) =>
    expect(`sandbox ${action} ${orderId}`, await client.api(p.apiKey, "POST", `/sandbox/orders/${orderId}/${action}`, body), 200);

  if (options.orders !== false) {
    log("fixtures: orders (deposits, locks, a dispute, a payment and a cancellation go through the chain)");
    const states = async (p: PartnerFixture, plan: string[]) => {
      for (const [i, target] of plan.entries()) {
        const o = await order(p, p.refs[i % p.refs.length]!);
        if (target === "PENDING_DEPOSIT") continue;
        if (target === "CANCELLED") {
          expect("cancel", await client.api(p.apiKey, "POST", `/orders/${o.id}/cancel`), 200);
          o.status = await waitForStatus(client, p.apiKey, o.id, ["REFUNDED", "EXPIRED"]);
          continue;
        }
        await sandbox(p, o.id, "deposit");
        o.status = await waitForStatus(client, p.apiKey, o.id, ["ACTIVE"]);
        if (target === "ACTIVE") continue;
        await sandbox(p, o.id, "lock");
        o.status = await waitForStatus(client, p.apiKey, o.id, ["LOCKED"]);
        if (target === "LOCKED") continue;
        if (target === "DISPUTED") {
          await sandbox(p, o.id, "dispute", { by: "BUYER" });
          o.status = await waitForStatus(client, p.apiKey, o.id, ["DISPUTED"]);
          continue;
        }
        await sandbox(p, o.id, "pay");
        o.status = await waitForStatus(client, p.apiKey, o.id, ["COMPLETED"]);
      }
    };
    await states(main, ["PENDING_DEPOSIT", "PENDING_DEPOSIT", "ACTIVE", "ACTIVE", "LOCKED", "LOCKED", "DISPUTED", "DISPUTED", "COMPLETED", "CANCELLED"]);
    await states(other, ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "DISPUTED"]);
    await states(growth, ["PENDING_DEPOSIT"]);
  }

  log("fixtures: quotes and KYC sessions");
  for (let i = 0; i < 40; i += 1) main.quotes.push(await quote(main, main.refs[i % main.refs.length]!, 1 + (i % 7)));
  for (let i = 0; i < 10; i += 1) other.quotes.push(await quote(other, other.refs[i % other.refs.length]!, 1 + (i % 5)));
  for (let i = 0; i < 3; i += 1) free.quotes.push(await quote(free, free.refs[i % free.refs.length]!, 1));
  for (const p of [other, free]) {
    const session = expect(`kyc session ${p.label}`, await client.api<{ sessionId: string }>(p.apiKey, "POST", `/users/${p.refs[0]}/kyc`, { level: "BASIC", returnUrl: "https://example.com/back" }), 201);
    p.kycSessions.push(session.sessionId);
  }

  const deliveries = expect("deliveries", await client.admin<{ deliveries: { id: string }[] }>("GET", "/deliveries?limit=100"), 200).deliveries.map((d) => d.id);
  const wallets = [
    "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
    "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
  ];
  return { partners: { main, other, growth, free, inactive, suspended, ipBlocked }, revokedKey, adminTargets, deliveries, wallets, webhookUrl };
}
