/**
 * Sandbox simulator of the KYC provider (Veriff Public API v1), so the production adapter in
 * src/integrations/kyc-provider.ts runs unchanged against it. Routes are relative; the host app mounts the
 * router at a prefix (e.g. /simulators/kyc) and `publicBaseUrl()` must return that mounted base URL.
 *
 * - `POST /v1/sessions`: checks `X-AUTH-CLIENT` (401 code 1801 missing, 1803 unknown key) and, when present,
 *   `X-HMAC-SIGNATURE` over the raw body (401 code 1812 not a hash, 1819 mismatch; Veriff does not require it on
 *   this endpoint); body errors answer 400 (1102 mandatory parameters missing, 1104 invalid parameters,
 *   1500/1501 vendorData). Success: 201 `{ status: "success", verification: { id, url, vendorData, host,
 *   status: "created", sessionToken } }`. Mode "down" makes this endpoint answer 500.
 * - `GET /v/:token`: the hosted page (level taken from the `LEVEL:` prefix of vendorData), with Approve and
 *   Reject buttons and a "PEP match" box, posting a form to `POST /v/:token/decision`.
 * - Deciding sends Veriff's decision webhook (`X-AUTH-CLIENT`, `X-HMAC-SIGNATURE` = hex HMAC-SHA256 of the raw
 *   body) to `callbackUrl()`, then the browser gets 303 to the session's `callback` (the offramp's returnUrl).
 *   PEP/sanctions screening travels as Veriff's legacy `person.pepSanctionMatch` ("possible match"/"no match";
 *   null when no screening ran: BASIC sessions without an explicit isPep).
 * - `sendWatchlistScreening()` sends Veriff's separate watchlist-screening webhook (PEP vs sanctions listings),
 *   for tests and sandbox use; `decide()` never sends it.
 * Sessions live in memory only.
 */
import type Router from "@koa/router";
import type { Context } from "koa";
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { createRouter } from "../../http/router.ts";
import { syntheticIdentity } from "../../domain/payer-identity.ts";

export type KycSimulatorMode = "normal" | "down";
export type KycSimulatorResult = "APPROVED" | "REJECTED";

export interface KycProviderSimulatorOptions {
  apiKey: string;
  secret: string;
  /** Public URL where the router is mounted, e.g. http://127.0.0.1:3000/simulators/kyc */
  publicBaseUrl: () => string;
  /** The offramp's decision-callback URL (Veriff's "Webhook decisions URL"). */
  callbackUrl: () => string;
  /** Timeout for each webhook delivery; default 10 s. */
  webhookTimeoutMs?: number;
  fetch?: typeof fetch;
}

export interface KycDecideOptions {
  isPep?: boolean;
  /**
   * The person the document and registries showed. An approval always names someone, as a real provider's
   * does: what is not given is generated from the session (syntheticIdentity). At BASIC only the name is
   * verified; at FULL the CURP (`person.idNumber`) and the RFC (`additionalVerifiedData.rfc`) too.
   */
  identity?: { name?: string; curp?: string; rfc?: string };
}

export interface KycScreeningOptions {
  isPep?: boolean;
  isSanctioned?: boolean;
}

export interface KycProviderSimulator {
  router: Router;
  decide(sessionId: string, result: KycSimulatorResult, opts?: KycDecideOptions): Promise<{ returnUrl: string | null }>;
  sendWatchlistScreening(sessionId: string, opts: KycScreeningOptions): Promise<void>;
  setMode(mode: KycSimulatorMode): void;
}

export type KycSimulatorErrorCode = "SESSION_NOT_FOUND" | "SESSION_ALREADY_DECIDED" | "WEBHOOK_DELIVERY_FAILED";

export class KycSimulatorError extends Error {
  override readonly name = "KycSimulatorError";
  readonly code: KycSimulatorErrorCode;
  /** Suggested HTTP status for a route that surfaces this error: 404, 409 or 502. */
  readonly status: number;

  constructor(code: KycSimulatorErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.status = code === "SESSION_NOT_FOUND" ? 404 : code === "SESSION_ALREADY_DECIDED" ? 409 : 502;
  }
}

interface SimSession {
  id: string;
  token: string;
  vendorData: string | null;
  callback: string | null;
  createdAt: Date;
  decided: null | { status: "approved" | "declined"; at: Date };
  deciding: boolean;
}

const MAX_BODY_BYTES = 64 * 1024;

function hmacHex(secret: string, body: Buffer | string): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

function sameString(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function levelOf(vendorData: string | null): "BASIC" | "FULL" | null {
  const prefix = vendorData?.split(":", 1)[0];
  return prefix === "BASIC" || prefix === "FULL" ? prefix : null;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}

/** The raw request bytes, whether or not a body parser ran before this router. */
async function readRawBody(ctx: Context): Promise<Buffer> {
  const parsed = (ctx.request as { rawBody?: unknown }).rawBody;
  if (typeof parsed === "string") return Buffer.from(parsed, "utf8");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > MAX_BODY_BYTES) ctx.throw(413, "body too large");
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

function fail(ctx: Context, status: number, code: string, message: string): void {
  ctx.status = status;
  ctx.body = { status: "fail", code, message };
}

function page(title: string, inner: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}
button{font-size:1rem;padding:.6rem 1.2rem;margin-right:.6rem}.level{font-size:1.4rem;font-weight:bold}</style>
</head><body>${inner}</body></html>`;
}

export function createKycProviderSimulator(options: KycProviderSimulatorOptions): KycProviderSimulator {
  const { apiKey, secret, publicBaseUrl, callbackUrl } = options;
  const webhookTimeoutMs = options.webhookTimeoutMs ?? 10_000;
  const doFetch = options.fetch ?? globalThis.fetch;
  const byId = new Map<string, SimSession>();
  const byToken = new Map<string, SimSession>();
  let mode: KycSimulatorMode = "normal";

  const router = createRouter<unknown>();

  router.post("/v1/sessions", async (ctx) => {
    if (mode === "down") return fail(ctx, 500, "500", "Internal Server Error");
    const raw = await readRawBody(ctx);
    const client = ctx.get("x-auth-client");
    if (!client) return fail(ctx, 401, "1801", "Mandatory X-AUTH-CLIENT header containing the API key is missing from the request.");
    if (!sameString(client, apiKey)) return fail(ctx, 401, "1803", "Integration with the API key was not found.");
    const signature = ctx.get("x-hmac-signature");
    if (signature) {
      if (!/^[0-9a-fA-F]{64}$/.test(signature)) return fail(ctx, 401, "1812", "Signature is not a valid SHA256 hash.");
      const expected = createHmac("sha256", secret).update(raw).digest();
      if (!timingSafeEqual(Buffer.from(signature, "hex"), expected)) {
        return fail(ctx, 401, "1819", "Signature does not match the HMAC-SHA256 of request body and integration API secret.");
      }
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString("utf8"));
    } catch {
      return fail(ctx, 400, "1104", "Request includes invalid parameters.");
    }
    const verification = isRecord(body) ? body.verification : undefined;
    if (!isRecord(verification)) return fail(ctx, 400, "1102", "Mandatory parameters are missing from the request.");
    const { vendorData, callback } = verification;
    if (vendorData !== undefined && vendorData !== null && typeof vendorData !== "string") {
      return fail(ctx, 400, "1501", "vendorData must be a string.");
    }
    if (typeof vendorData === "string" && vendorData.length > 1000) {
      return fail(ctx, 400, "1500", "vendorData field cannot be more than 1000 symbols.");
    }
    if (callback !== undefined && (typeof callback !== "string" || !isHttpUrl(callback))) {
      return fail(ctx, 400, "1104", "Request includes invalid parameters.");
    }

    const session: SimSession = {
      id: randomUUID(),
      token: randomBytes(24).toString("base64url"),
      vendorData: typeof vendorData === "string" ? vendorData : null,
      callback: typeof callback === "string" ? callback : null,
      createdAt: new Date(),
      decided: null,
      deciding: false,
    };
    byId.set(session.id, session);
    byToken.set(session.token, session);
    const base = publicBaseUrl().replace(/\/+$/, "");
    ctx.status = 201;
    ctx.body = {
      status: "success",
      verification: {
        id: session.id,
        url: `${base}/v/${session.token}`,
        vendorData: session.vendorData,
        host: new URL(base).origin,
        status: "created",
        sessionToken: session.token,
      },
    };
  });

  router.get("/v/:token", (ctx) => {
    const session = byToken.get(ctx.params.token ?? "");
    ctx.type = "html";
    if (!session) {
      ctx.status = 404;
      ctx.body = page("Session not found", "<h1>Session not found</h1>");
      return;
    }
    const level = levelOf(session.vendorData) ?? "unknown";
    if (session.decided) {
      ctx.body = page(
        "Verification finished",
        `<h1>Verification finished</h1><p>Level <span class="level">${escapeHtml(level)}</span>: ${escapeHtml(session.decided.status)}.</p>`,
      );
      return;
    }
    // Relative action: /<prefix>/v/<token> + "<token>/decision" resolves to /<prefix>/v/<token>/decision.
    ctx.body = page(
      "Identity verification (sandbox)",
      `<h1>Identity verification (sandbox)</h1>
<p>Level: <span class="level" id="level">${escapeHtml(level)}</span></p>
<p>Session <code>${escapeHtml(session.id)}</code></p>
<form method="post" action="${escapeHtml(encodeURIComponent(session.token))}/decision">
<p><label><input type="checkbox" name="pep" value="1"> PEP match (politically exposed person)</label></p>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="reject">Reject</button>
</form>`,
    );
  });

  router.post("/v/:token/decision", async (ctx) => {
    const session = byToken.get(ctx.params.token ?? "");
    const raw = await readRawBody(ctx);
    ctx.type = "html";
    if (!session) {
      ctx.status = 404;
      ctx.body = page("Session not found", "<h1>Session not found</h1>");
      return;
    }
    const form = new URLSearchParams(raw.toString("utf8"));
    const choice = form.get("decision");
    if (choice !== "approve" && choice !== "reject") {
      ctx.status = 400;
      ctx.body = page("Bad request", "<h1>Choose Approve or Reject</h1>");
      return;
    }
    const pep = form.get("pep");
    try {
      const { returnUrl } = await decide(session.id, choice === "approve" ? "APPROVED" : "REJECTED", {
        ...(pep !== null ? { isPep: pep === "1" || pep === "on" || pep === "true" } : {}),
      });
      if (returnUrl) {
        ctx.status = 303;
        ctx.redirect(returnUrl);
        return;
      }
      ctx.body = page("Verification finished", "<h1>Verification finished</h1><p>You can close this page.</p>");
    } catch (err) {
      if (!(err instanceof KycSimulatorError)) throw err;
      ctx.status = err.status;
      ctx.body = page("Verification not recorded", `<h1>Verification not recorded</h1><p>${escapeHtml(err.message)}</p>`);
    }
  });

  async function deliver(payload: unknown): Promise<void> {
    const body = JSON.stringify(payload);
    let res: Response;
    try {
      res = await doFetch(callbackUrl(), {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-AUTH-CLIENT": apiKey,
          "X-HMAC-SIGNATURE": hmacHex(secret, body),
        },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(webhookTimeoutMs),
      });
    } catch (err) {
      throw new KycSimulatorError("WEBHOOK_DELIVERY_FAILED", "the decision webhook could not be delivered", { cause: err });
    }
    await res.arrayBuffer().catch(() => undefined);
    if (res.status < 200 || res.status > 299) {
      throw new KycSimulatorError("WEBHOOK_DELIVERY_FAILED", `the decision webhook was answered with HTTP ${res.status}`);
    }
  }

  function findSession(sessionId: string): SimSession {
    const session = byId.get(sessionId);
    if (!session) throw new KycSimulatorError("SESSION_NOT_FOUND", "no such verification session");
    return session;
  }

  async function decide(
    sessionId: string,
    result: KycSimulatorResult,
    opts: KycDecideOptions = {},
  ): Promise<{ returnUrl: string | null }> {
    const session = findSession(sessionId);
    if (session.decided || session.deciding) {
      throw new KycSimulatorError("SESSION_ALREADY_DECIDED", "the verification session is already decided");
    }
    if (result !== "APPROVED" && result !== "REJECTED") throw new TypeError("result must be APPROVED or REJECTED");
    const approved = result === "APPROVED";
    const full = levelOf(session.vendorData) === "FULL";
    const screened = opts.isPep !== undefined || (approved && full);
    const generated = syntheticIdentity(session.id);
    const name = approved ? (opts.identity?.name ?? generated.name).trim() : null;
    const [firstName, ...lastNames] = name ? name.split(/\s+/) : [];
    const curp = approved && full ? (opts.identity?.curp ?? generated.curp) : null;
    const rfc = approved && full ? (opts.identity?.rfc ?? generated.rfc) : null;
    const now = new Date();
    const payload = {
      status: "success",
      verification: {
        id: session.id,
        attemptId: randomUUID(),
        vendorData: session.vendorData,
        endUserId: null,
        status: approved ? "approved" : "declined",
        code: approved ? 9001 : 9102,
        reason: approved ? null : "Declined by the sandbox reviewer",
        reasonCode: null,
        decisionTime: now.toISOString(),
        acceptanceTime: session.createdAt.toISOString(),
        person: {
          firstName: firstName ?? null,
          lastName: lastNames.length ? lastNames.join(" ") : null,
          dateOfBirth: null,
          gender: null,
          idNumber: curp,
          nationality: null,
          citizenship: null,
          yearOfBirth: null,
          placeOfBirth: null,
          pepSanctionMatch: screened ? (opts.isPep ? "possible match" : "no match") : null,
        },
        document: { number: null, type: null, country: null, validFrom: null, validUntil: null, state: null },
        comments: [],
        additionalVerifiedData: rfc ? { rfc } : {},
        riskLabels: [],
      },
      technicalData: { ip: null },
    };
    session.deciding = true;
    try {
      await deliver(payload);
      session.decided = { status: approved ? "approved" : "declined", at: now };
    } finally {
      session.deciding = false;
    }
    return { returnUrl: session.callback };
  }

  async function sendWatchlistScreening(sessionId: string, opts: KycScreeningOptions): Promise<void> {
    const session = findSession(sessionId);
    const listing = (name: string) => ({ sourceName: name, sourceUrl: "https://sandbox.invalid/list", date: null });
    const hit = (opts.isPep ?? false) || (opts.isSanctioned ?? false);
    const hits = hit
      ? [
          {
            matchedName: "SANDBOX PERSON",
            countries: ["MX"],
            dateOfBirth: null,
            dateOfDeath: null,
            matchTypes: ["name_exact"],
            aka: [],
            associates: [],
            listingsRelatedToMatch: {
              warnings: [],
              sanctions: opts.isSanctioned ? [listing("Sandbox sanctions list")] : [],
              fitnessProbity: [],
              pep: opts.isPep ? [listing("Sandbox PEP list")] : [],
              adverseMedia: [],
            },
          },
        ]
      : [];
    await deliver({
      checkType: "initial_result",
      attemptId: randomUUID(),
      sessionId: session.id,
      vendorData: session.vendorData,
      endUserId: null,
      matchStatus: hit ? "possible_match" : "no_match",
      searchTerm: { name: "SANDBOX PERSON", year: null },
      totalHits: hits.length,
      createdAt: new Date().toISOString(),
      hits,
    });
  }

  return {
    router,
    decide,
    sendWatchlistScreening,
    setMode(next: KycSimulatorMode) {
      if (next !== "normal" && next !== "down") throw new TypeError("mode must be normal or down");
      mode = next;
    },
  };
}
