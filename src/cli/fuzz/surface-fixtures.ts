// The market's and the dashboard's fuzz data, made the way a buyer and a partner's staff would: buyers
// signed in with their wallets (the sandbox buyer whose wallet locked the fixture orders, and a fresh one),
// and members of two partners of their own (so a rotated key or a changed allow-list never touches the
// partners the partner API's traffic uses), each with orders, deliveries and members to aim at.
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import type { Hex } from "viem";
import { sandboxAccounts } from "../../stack/local-node.ts";
import { SELLER_CLABE, type FixtureClient, type PartnerFixture } from "./fixtures.ts";

type Json = Record<string, unknown>;

export interface BuyerFixture {
  label: string;
  token: string;
  /** escrowOrderIds of the orders this wallet locked. */
  trades: string[];
}

export interface MarketFixtures {
  /** `locker`: the sandbox buyer that locked the partner fixtures' orders; `fresh`: a wallet with no trade. */
  buyers: { locker: BuyerFixture; fresh: BuyerFixture };
  /** A session used only to sign out (its own sign-out would end a main principal's session). */
  signOutToken: string;
  revokedToken: string;
  /** escrowOrderIds listed in the order book. */
  listed: string[];
}

export interface MemberSession {
  label: string;
  role: "OWNER" | "DEVELOPER" | "VIEWER";
  cookie: string;
  csrfToken: string;
}

export interface DashboardTenant {
  partner: PartnerFixture;
  sessions: MemberSession[];
  /** Members the fuzzer may change or remove (never one whose session it uses). */
  victimMembers: string[];
  deliveries: string[];
}

export interface DashboardFixtures {
  tenants: { a: DashboardTenant; b: DashboardTenant };
  signOutSession: MemberSession;
  revokedCookie: string;
}

const PASSWORD = "fuzz member password 1";

async function call(baseUrl: string, method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${baseUrl}${path}`, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}), signal: AbortSignal.timeout(60_000) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as Json };
}

function expect(what: string, response: { status: number; body: Json }, status: number): Json {
  if (response.status !== status) throw new Error(`fixture ${what}: ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
  return response.body;
}

async function signInBuyer(baseUrl: string, account: PrivateKeyAccount): Promise<string> {
  const challenge = expect("market challenge", await call(baseUrl, "POST", "/market/v1/auth/challenge", { body: { address: account.address } }), 201);
  const message = challenge.message as string;
  const signature = await account.signMessage({ message });
  return expect("market session", await call(baseUrl, "POST", "/market/v1/auth/session", { body: { message, signature } }), 201).token as string;
}

export async function createMarketFixtures(baseUrl: string): Promise<MarketFixtures> {
  // The sandbox's default buyer (sandbox wallet 1) locked the fixture orders: its sessions see them as trades.
  const locker = privateKeyToAccount(sandboxAccounts[1]!.privateKey as Hex);
  const lockerToken = await signInBuyer(baseUrl, locker);
  const trades = expect("trades", await call(baseUrl, "GET", "/market/v1/trades?limit=100", { headers: { authorization: `Bearer ${lockerToken}` } }), 200);
  const fresh = privateKeyToAccount(generatePrivateKey());
  const freshToken = await signInBuyer(baseUrl, fresh);
  const book = expect("order book", await call(baseUrl, "GET", "/market/v1/orders?limit=100", { headers: { authorization: `Bearer ${freshToken}` } }), 200);
  const revokedToken = await signInBuyer(baseUrl, fresh);
  expect("sign out", await call(baseUrl, "DELETE", "/market/v1/auth/session", { headers: { authorization: `Bearer ${revokedToken}` } }), 204);
  return {
    buyers: {
      locker: { label: "buyer (sandbox wallet with trades)", token: lockerToken, trades: (trades.trades as { escrowOrderId: string }[]).map((t) => t.escrowOrderId) },
      fresh: { label: "buyer (new wallet)", token: freshToken, trades: [] },
    },
    signOutToken: await signInBuyer(baseUrl, fresh),
    revokedToken,
    listed: (book.orders as { escrowOrderId: string }[]).map((o) => o.escrowOrderId),
  };
}

function inviteToken(inviteUrl: string): string {
  const match = /#\/invitation\/([A-Za-z0-9_-]+)$/.exec(inviteUrl);
  if (!match) throw new Error(`not an invitation URL: ${inviteUrl}`);
  return match[1]!;
}

async function member(baseUrl: string, client: FixtureClient, partnerId: string, role: MemberSession["role"], label: string): Promise<{ id: string; session: MemberSession }> {
  const email = `${label.replace(/\W+/g, "-")}-${Math.random().toString(36).slice(2, 8)}@fuzz.example`;
  const invited = await client.admin<{ id: string; inviteUrl: string }>("POST", `/partners/${partnerId}/members`, { email, role });
  if (invited.status !== 201) throw new Error(`fixture invite ${label}: ${invited.status} ${JSON.stringify(invited.body)}`);
  const accepted = await call(baseUrl, "POST", `/dashboard/v1/invitations/${inviteToken(invited.body.inviteUrl)}`, { body: { password: PASSWORD } });
  const body = expect(`accept ${label}`, accepted, 201);
  const cookie = accepted.headers
    .getSetCookie()
    .map((line) => line.split(";")[0]!)
    .find((pair) => pair.startsWith("offramp_dashboard="));
  if (!cookie) throw new Error(`fixture accept ${label}: no session cookie`);
  return { id: invited.body.id, session: { label, role, cookie, csrfToken: body.csrfToken as string } };
}

export async function createDashboardFixtures(
  baseUrl: string,
  client: FixtureClient,
  options: { tag: string; webhookUrl: string },
): Promise<DashboardFixtures> {
  const tenant = async (label: string, roles: MemberSession["role"][]): Promise<DashboardTenant> => {
    const created = expect(
      `partner ${label}`,
      { ...(await client.admin<Json>("POST", "/partners", { name: `fuzz ${options.tag} ${label}`, webhookUrl: options.webhookUrl, tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", limits: { requestsPerMinute: 100_000 } })) },
      201,
    );
    const partner: PartnerFixture = { label, id: created.id as string, apiKey: created.apiKey as string, tier: "ENTERPRISE", kycModel: "PARTNER_MANAGED", refs: [], userIds: [], orders: [], quotes: [], kycSessions: [] };
    const ref = `${options.tag}-${label}-u0`;
    const user = await client.api<Json>(partner.apiKey, "POST", "/users", { partnerUserRef: ref, kycAttestation: { level: "FULL", verifiedAt: new Date(Date.now() - 86_400_000).toISOString() } });
    expect(`user ${ref}`, user, 201);
    partner.refs.push(ref);
    partner.userIds.push(user.body.id as string);
    for (let i = 0; i < 3; i += 1) {
      const quote = expect("quote", await client.api<Json>(partner.apiKey, "POST", "/quotes", { type: "SELL", amountUsdc: 5 + i, partnerUserRef: ref, feePercent: 1, feeRecipient: "PARTNER" }), 201);
      const order = expect("order", await client.api<Json>(partner.apiKey, "POST", "/orders", { quoteId: quote.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE }), 201);
      partner.orders.push({ id: order.id as string, status: "PENDING_DEPOSIT" });
    }
    const sessions: MemberSession[] = [];
    for (const role of roles) sessions.push((await member(baseUrl, client, partner.id, role, `${label} ${role.toLowerCase()}`)).session);
    const victimMembers = [(await member(baseUrl, client, partner.id, "VIEWER", `${label} victim 1`)).id, (await member(baseUrl, client, partner.id, "DEVELOPER", `${label} victim 2`)).id];
    const owner = sessions.find((s) => s.role === "OWNER")!;
    const deliveries = expect("deliveries", await call(baseUrl, "GET", "/dashboard/v1/deliveries?limit=100", { headers: { cookie: owner.cookie } }), 200);
    return { partner, sessions, victimMembers, deliveries: (deliveries.deliveries as { id: string }[]).map((d) => d.id) };
  };
  const a = await tenant("dash-a", ["OWNER", "DEVELOPER", "VIEWER"]);
  const b = await tenant("dash-b", ["OWNER", "VIEWER"]);
  const signOut = await member(baseUrl, client, a.partner.id, "OWNER", "dash-a sign-out");
  const revoked = await member(baseUrl, client, b.partner.id, "VIEWER", "dash-b revoked");
  expect("sign out", await call(baseUrl, "DELETE", "/dashboard/v1/session", { headers: { cookie: revoked.session.cookie, "x-csrf-token": revoked.session.csrfToken } }), 204);
  return { tenants: { a, b }, signOutSession: signOut.session, revokedCookie: revoked.session.cookie };
}
