// The APIs the fuzzer aims at: one entry per OpenAPI document, saying where the document is, how a
// caller authenticates (and how it fails to), and which real values its path parameters and fields take.
// The market authenticates with a buyer's bearer session, the dashboard with a member's cookie and CSRF token.
import type { FixtureClient, Fixtures, PartnerFixture } from "./fixtures.ts";
import { SELLER_CLABE } from "./fixtures.ts";
import type { Rng } from "./rng.ts";
import { createDashboardFixtures, createMarketFixtures, type BuyerFixture, type DashboardFixtures, type MarketFixtures, type MemberSession } from "./surface-fixtures.ts";
import type { Schema } from "./values.ts";

/** One way of being authenticated (a partner's key, the admin token, a buyer's session...). */
export interface Principal {
  label: string;
  headers: Record<string, string>;
  weight: number;
  /** The tenant whose data this principal owns, for targets with tenants. */
  tenant?: PartnerFixture;
  /** The operations this principal is used for (default all): a session's own sign-out would end it for the rest of the run. */
  uses?: (method: string, path: string) => boolean;
}

/** Credentials that must be refused, as headers (an array sends the header line twice). */
export interface BrokenCredentials {
  label: string;
  headers: Record<string, string | string[]>;
}

/** "own": the principal's data; "other": another tenant's (must be refused); "random": nobody's. */
export type ValueMode = "own" | "other" | "random";

export interface ValueContext {
  path: string;
  method: string;
  principal: Principal;
  rng: Rng;
  mode: ValueMode;
}

export interface ApiTarget {
  name: string;
  /** The document's server URL, e.g. /api/v1. */
  prefix: string;
  documentPath: string;
  documentHeaders: Record<string, string>;
  principals: Principal[];
  brokenCredentials(rng: Rng): BrokenCredentials;
  /** Every response under the prefix carries X-RateLimit-* (decisions 3). */
  rateLimitHeaders: boolean;
  /** Whether its data belongs to tenants (then other tenants' values are tried and must be refused). */
  tenants: boolean;
  pathValue(param: string, context: ValueContext): string;
  /** A real value for a body or query field, or undefined to let the schema decide. */
  fieldValue(name: string, schema: Schema, context: ValueContext): unknown;
  /** Ids a principal must never see in a 2xx answer. */
  foreignIds(principal: Principal): string[];
  /** Operations anyone may call (sign-in, the public order book): a caller without credentials is not expected to be refused there. */
  open?: (method: string, path: string) => boolean;
}

function randomId(rng: Rng, prefix: string): string {
  return `${prefix}_${rng.hex(rng.pick([8, 24]))}`;
}

function otherTenant(fixtures: Fixtures, principal: Principal): PartnerFixture {
  return principal.tenant?.id === fixtures.partners.other.id ? fixtures.partners.main : fixtures.partners.other;
}

function pickOr<T>(rng: Rng, items: T[], fallback: () => T): T {
  return items.length ? rng.pick(items) : fallback();
}

export function partnerTarget(fixtures: Fixtures): ApiTarget {
  const { main, other, growth, free, inactive, suspended, ipBlocked } = fixtures.partners;
  const principal = (p: PartnerFixture, weight: number): Principal => ({ label: `partner ${p.label} (${p.tier})`, headers: { "X-API-Key": p.apiKey }, weight, tenant: p });
  const tenantOf = (context: ValueContext): PartnerFixture | undefined =>
    context.mode === "other" ? otherTenant(fixtures, context.principal) : context.mode === "own" ? context.principal.tenant : undefined;

  return {
    name: "partner",
    prefix: "/api/v1",
    documentPath: "/api/v1/openapi.json",
    documentHeaders: {},
    principals: [principal(main, 10), principal(other, 3), principal(growth, 1), principal(free, 1)],
    rateLimitHeaders: true,
    tenants: true,
    brokenCredentials(rng) {
      const key = main.apiKey;
      return rng.pick<BrokenCredentials>([
        { label: "no key", headers: {} },
        { label: "empty key", headers: { "X-API-Key": "" } },
        { label: "malformed key", headers: { "X-API-Key": `ofrk_${rng.hex(10)}` } },
        { label: "unknown key", headers: { "X-API-Key": `ofrk_${rng.hex(64)}` } },
        { label: "key in upper case", headers: { "X-API-Key": `ofrk_${key.slice(5).toUpperCase()}` } },
        { label: "key one character off", headers: { "X-API-Key": `${key.slice(0, -1)}${key.endsWith("0") ? "1" : "0"}` } },
        { label: "key duplicated", headers: { "X-API-Key": [key, key] } },
        { label: "two keys", headers: { "X-API-Key": [key, other.apiKey] } },
        { label: "key as bearer token", headers: { Authorization: `Bearer ${key}` } },
        { label: "key with a NUL-like suffix", headers: { "X-API-Key": `${key}\u00ff` } },
        { label: "revoked key", headers: { "X-API-Key": fixtures.revokedKey } },
        { label: "inactive partner", headers: { "X-API-Key": inactive.apiKey } },
        { label: "suspended partner", headers: { "X-API-Key": suspended.apiKey } },
        { label: "address not allowed", headers: { "X-API-Key": ipBlocked.apiKey } },
      ]);
    },
    pathValue(param, context) {
      const { rng, path } = context;
      const tenant = tenantOf(context);
      if (param === "ref") return tenant ? pickOr(rng, tenant.refs, () => `ref-${rng.hex(6)}`) : `nobody-${rng.hex(6)}`;
      if (param === "sessionId") return tenant ? pickOr(rng, tenant.kycSessions, () => `kyc_${rng.hex(12)}`) : `kyc_${rng.hex(12)}`;
      if (param === "id" && path.includes("/orders/")) {
        if (!tenant) return randomId(rng, "ord");
        // Mostly orders in the state the action needs, so valid requests get through.
        const wanted = path.endsWith("/deposit") ? "PENDING_DEPOSIT" : path.endsWith("/lock") ? "ACTIVE" : /\/(dispute|pay|payment)$/.test(path) ? "LOCKED" : path.endsWith("/cancel") ? "PENDING_DEPOSIT" : undefined;
        const matching = tenant.orders.filter((o) => o.status === wanted);
        return pickOr(rng, matching.length && rng.bool(0.7) ? matching : tenant.orders, () => ({ id: randomId(rng, "ord"), status: "" })).id;
      }
      return `${param}-${rng.hex(8)}`;
    },
    fieldValue(name, schema, context) {
      const { rng, path, method } = context;
      const tenant = tenantOf(context);
      switch (name) {
        case "partnerUserRef":
          if (method === "post" && path === "/users" && context.mode !== "other") return `fz-${rng.hex(10)}`;
          return tenant ? pickOr(rng, tenant.refs, () => `ref-${rng.hex(6)}`) : `nobody-${rng.hex(6)}`;
        case "quoteId":
          return tenant ? pickOr(rng, tenant.quotes, () => randomId(rng, "qt")) : randomId(rng, "qt");
        case "orderId":
          return tenant ? pickOr(rng, tenant.orders.map((o) => o.id), () => randomId(rng, "ord")) : randomId(rng, "ord");
        case "sellerClabe":
        case "clabe":
          return rng.bool(0.9) ? SELLER_CLABE : undefined;
        case "returnUrl":
          return "https://example.com/back";
        case "amountUsdc":
          return rng.bool(0.8) ? rng.int(1, 2000) / 100 : undefined;
        case "amountMxn":
          return rng.bool(0.5) ? undefined : rng.int(100, 100_000) / 100;
        case "sellerWallet":
        case "buyerWallet":
          return rng.int(0, 4);
        case "eventType":
          return rng.pick(["order.created", "order.completed", "order.locked"]);
        default:
          void schema;
          return undefined;
      }
    },
    foreignIds(p) {
      const others = [main, other, growth, free].filter((tenant) => tenant.id !== p.tenant?.id);
      return others.flatMap((tenant) => [tenant.id, ...tenant.userIds, ...tenant.orders.map((o) => o.id), ...tenant.quotes, ...tenant.kycSessions]);
    },
  };
}

export function adminTarget(fixtures: Fixtures, adminToken: string): ApiTarget {
  const all = Object.values(fixtures.partners);
  return {
    name: "admin",
    prefix: "/admin/v1",
    documentPath: "/admin/v1/openapi.json",
    documentHeaders: { Authorization: `Bearer ${adminToken}` },
    principals: [
      { label: "admin token", headers: { Authorization: `Bearer ${adminToken}` }, weight: 5 },
      // The scheme name is case-insensitive (RFC 9110 section 11.1).
      { label: "admin token, scheme in lower case", headers: { Authorization: `bearer ${adminToken}` }, weight: 1 },
    ],
    rateLimitHeaders: false,
    tenants: false,
    brokenCredentials(rng) {
      return rng.pick<BrokenCredentials>([
        { label: "no token", headers: {} },
        { label: "empty authorization", headers: { Authorization: "" } },
        { label: "scheme only", headers: { Authorization: "Bearer" } },
        { label: "wrong token", headers: { Authorization: `Bearer ${rng.hex(32)}` } },
        { label: "token prefix", headers: { Authorization: `Bearer ${adminToken.slice(0, -1)}` } },
        { label: "token plus a character", headers: { Authorization: `Bearer ${adminToken}x` } },
        { label: "token in upper case", headers: { Authorization: `Bearer ${adminToken.toUpperCase()}` } },
        { label: "token without scheme", headers: { Authorization: adminToken } },
        { label: "basic scheme", headers: { Authorization: `Basic ${Buffer.from(`admin:${adminToken}`).toString("base64")}` } },
        { label: "wrong then right token", headers: { Authorization: [`Bearer ${rng.hex(16)}`, `Bearer ${adminToken}`] } },
        { label: "token in X-API-Key", headers: { "X-API-Key": adminToken } },
        { label: "partner key as bearer", headers: { Authorization: `Bearer ${fixtures.partners.main.apiKey}` } },
      ]);
    },
    pathValue(param, context) {
      const { rng, path, mode } = context;
      if (mode === "random") return param === "address" ? `0x${rng.hex(40)}` : randomId(rng, param === "id" && path.startsWith("/orders") ? "ord" : "x");
      if (path.startsWith("/partners/")) {
        // Only the admin targets are changed; any partner may be read.
        return context.method === "get" ? rng.pick(all).id : rng.pick(fixtures.adminTargets);
      }
      if (path.startsWith("/orders/")) {
        const orders = all.flatMap((p) => p.orders);
        const disputed = orders.filter((o) => o.status === "DISPUTED");
        return pickOr(rng, path.endsWith("/resolve") && disputed.length && rng.bool(0.7) ? disputed : orders, () => ({ id: randomId(rng, "ord"), status: "" })).id;
      }
      if (path.startsWith("/deliveries/")) return pickOr(rng, fixtures.deliveries, () => randomId(rng, "whd"));
      if (param === "address") return rng.bool(0.7) ? rng.pick(fixtures.wallets) : `0x${rng.hex(40)}`;
      return `${param}-${rng.hex(8)}`;
    },
    fieldValue(name, _schema, context) {
      const { rng } = context;
      switch (name) {
        case "webhookUrl":
          return rng.bool(0.8) ? fixtures.webhookUrl : undefined;
        case "partnerId":
          return rng.pick(all).id;
        case "orderId":
          return pickOr(rng, all.flatMap((p) => p.orders.map((o) => o.id)), () => randomId(rng, "ord"));
        case "partnerUserRef":
          return pickOr(rng, all.flatMap((p) => p.refs), () => `ref-${rng.hex(6)}`);
        case "ipAllowList":
          return rng.bool(0.7) ? rng.pick([[], ["10.0.0.0/8"], ["127.0.0.1", "::1"], ["2001:db8::/32"]]) : undefined;
        case "month":
          return rng.bool(0.7) ? new Date().toISOString().slice(0, 7) : undefined;
        default:
          return undefined;
      }
    },
    foreignIds() {
      return [];
    },
  };
}

/** Both surfaces' sign-out: used only by the principal kept for it, so the others' sessions last the run. */
const signingOut = (method: string, path: string) => method === "delete" && (path === "/auth/session" || path === "/session");

export function marketTarget(fixtures: Fixtures, market: MarketFixtures): ApiTarget {
  const { locker, fresh } = market.buyers;
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const buyers = new Map<string, BuyerFixture>([
    [locker.label, locker],
    [fresh.label, fresh],
  ]);
  return {
    name: "market",
    prefix: "/market/v1",
    documentPath: "/market/v1/openapi.json",
    documentHeaders: {},
    principals: [
      { label: locker.label, headers: bearer(locker.token), weight: 4, uses: (method, path) => !signingOut(method, path) },
      { label: fresh.label, headers: bearer(fresh.token), weight: 2, uses: (method, path) => !signingOut(method, path) },
      { label: "buyer signing out", headers: bearer(market.signOutToken), weight: 1, uses: signingOut },
    ],
    rateLimitHeaders: false,
    tenants: false,
    open: (method, path) => (method === "post" && (path === "/auth/challenge" || path === "/auth/session")) || (method === "get" && path === "/orders"),
    brokenCredentials(rng) {
      return rng.pick<BrokenCredentials>([
        { label: "no token", headers: {} },
        { label: "scheme only", headers: { Authorization: "Bearer" } },
        { label: "unknown token", headers: bearer(`mks_${rng.hex(64)}`) },
        { label: "malformed token", headers: bearer(`mks_${rng.hex(10)}`) },
        { label: "token one character off", headers: bearer(`${locker.token.slice(0, -1)}${locker.token.endsWith("0") ? "1" : "0"}`) },
        { label: "signed-out token", headers: bearer(market.revokedToken) },
        { label: "token without scheme", headers: { Authorization: locker.token } },
        { label: "token in X-API-Key", headers: { "X-API-Key": locker.token } },
        { label: "partner key as bearer", headers: bearer(fixtures.partners.main.apiKey) },
        { label: "two tokens", headers: { Authorization: [`Bearer ${locker.token}`, `Bearer ${fresh.token}`] } },
      ]);
    },
    pathValue(param, context) {
      const { rng, path, mode, principal } = context;
      if (param === "escrowOrderId") {
        if (mode === "random") return `0x${rng.hex(64)}`;
        // A buyer's own trades, the book's orders, and (for the new wallet) the other buyer's trades, which
        // it must not see.
        const own = buyers.get(principal.label)?.trades ?? [];
        const candidates = path.startsWith("/trades") ? [...own, ...(own.length ? [] : locker.trades)] : market.listed;
        return pickOr(rng, candidates, () => `0x${rng.hex(64)}`);
      }
      return `${param}-${rng.hex(8)}`;
    },
    fieldValue(name, _schema, context) {
      const { rng } = context;
      switch (name) {
        case "address":
          return rng.bool(0.8) ? `0x${rng.hex(40)}` : undefined;
        case "returnUrl":
          return "https://example.com/back";
        default:
          return undefined;
      }
    },
    foreignIds(principal) {
      return principal.label === locker.label ? [] : locker.trades;
    },
  };
}

export function dashboardTarget(fixtures: Fixtures, dashboard: DashboardFixtures): ApiTarget {
  const { a, b } = dashboard.tenants;
  const tenants = [a, b];
  const sessionHeaders = (session: MemberSession) => ({ Cookie: session.cookie, "X-CSRF-Token": session.csrfToken });
  const tenantOf = (partner: PartnerFixture | undefined) => tenants.find((t) => t.partner.id === partner?.id);
  const keep = (method: string, path: string) => !signingOut(method, path);
  const principals: Principal[] = tenants.flatMap((t) =>
    t.sessions.map((session) => ({ label: `${session.label}`, headers: sessionHeaders(session), weight: session.role === "OWNER" ? 4 : 1, tenant: t.partner, uses: keep })),
  );
  principals.push({ label: dashboard.signOutSession.label, headers: sessionHeaders(dashboard.signOutSession), weight: 1, tenant: a.partner, uses: signingOut });
  const owner = a.sessions.find((s) => s.role === "OWNER")!;
  return {
    name: "dashboard",
    prefix: "/dashboard/v1",
    documentPath: "/dashboard/v1/openapi.json",
    documentHeaders: {},
    principals,
    rateLimitHeaders: false,
    tenants: true,
    open: (method, path) => method === "post" && (path === "/session" || path.startsWith("/invitations/")),
    brokenCredentials(rng) {
      const [name, token] = owner.cookie.split("=") as [string, string];
      return rng.pick<BrokenCredentials>([
        { label: "no cookie", headers: {} },
        { label: "unknown session", headers: { Cookie: `${name}=${rng.hex(64)}` } },
        { label: "empty session", headers: { Cookie: `${name}=` } },
        { label: "session one character off", headers: { Cookie: `${name}=${token.slice(0, -1)}${token.endsWith("0") ? "1" : "0"}` } },
        { label: "signed-out session", headers: { Cookie: dashboard.revokedCookie } },
        { label: "session under another cookie name", headers: { Cookie: `session=${token}` } },
        { label: "session as bearer", headers: { Authorization: `Bearer ${token}` } },
        { label: "CSRF token without the cookie", headers: { "X-CSRF-Token": owner.csrfToken } },
        { label: "partner key", headers: { "X-API-Key": a.partner.apiKey } },
        { label: "partner key of another fixture", headers: { "X-API-Key": fixtures.partners.main.apiKey } },
      ]);
    },
    pathValue(param, context) {
      const { rng, path, mode, principal } = context;
      const tenant = mode === "other" ? tenants.find((t) => t.partner.id !== principal.tenant?.id) : mode === "own" ? tenantOf(principal.tenant) : undefined;
      if (path.startsWith("/orders/")) return tenant ? pickOr(rng, tenant.partner.orders, () => ({ id: randomId(rng, "ord"), status: "" })).id : randomId(rng, "ord");
      if (path.startsWith("/deliveries/")) return tenant ? pickOr(rng, tenant.deliveries, () => randomId(rng, "whd")) : randomId(rng, "whd");
      if (path.startsWith("/members/")) return tenant ? pickOr(rng, tenant.victimMembers, () => randomId(rng, "mbr")) : randomId(rng, "mbr");
      if (param === "token") return rng.hex(rng.pick([16, 64]));
      return `${param}-${rng.hex(8)}`;
    },
    fieldValue(name, _schema, context) {
      const { rng } = context;
      switch (name) {
        case "url":
          // Always the receiver: a URL that fails would keep redelivered events retrying in the background,
          // which the data check cannot tell from a change made by a refused request.
          return fixtures.webhookUrl;
        case "entries":
          return rng.bool(0.7) ? rng.pick([[], ["10.0.0.0/8"], ["127.0.0.1", "::1"], ["2001:db8::/32"]]) : undefined;
        case "email":
          return rng.bool(0.8) ? `fz-${rng.hex(6)}@example.com` : undefined;
        case "orderId":
          return pickOr(rng, tenantOf(context.principal.tenant)?.partner.orders.map((o) => o.id) ?? [], () => randomId(rng, "ord"));
        default:
          return undefined;
      }
    },
    foreignIds(principal) {
      const other = tenants.find((t) => t.partner.id !== principal.tenant?.id)!;
      return [other.partner.id, ...other.partner.orders.map((o) => o.id), ...other.deliveries, ...other.victimMembers];
    },
  };
}

/** Every API of the service, each with its fuzz data: partner, admin, market and dashboard. */
export async function allTargets(
  baseUrl: string,
  client: FixtureClient,
  fixtures: Fixtures,
  options: { adminToken: string; tag: string },
): Promise<ApiTarget[]> {
  const market = await createMarketFixtures(baseUrl);
  const dashboard = await createDashboardFixtures(baseUrl, client, { tag: options.tag, webhookUrl: fixtures.webhookUrl });
  return [partnerTarget(fixtures), adminTarget(fixtures, options.adminToken), marketTarget(fixtures, market), dashboardTarget(fixtures, dashboard)];
}
