import { performance } from "node:perf_hooks";
import type Koa from "koa";
import type { Pool } from "../db/pool.ts";
import { InvalidCredentialsError, NotFoundError, ValidationError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import { isValidAllowListEntry } from "../domain/ip-allow-list.ts";
import type { WebhookUrlCheck } from "../webhooks/url-guard.ts";
import type { AppContext, AppState } from "../http/context.ts";
import { orderDetail, orderListQuery, orderPageSchema, partnerOrderPage } from "../orders/routes.ts";
import { orderDetailSchema } from "../orders/order-schema.ts";
import { deliveryListSpec, deliveryRecordSchema, memberDeliveryDetailSchema, type DeliveryQuery } from "../webhooks/partner-routes.ts";
import type { RouteGroup, RouteSpec } from "../http/routes.ts";
import { isoTimestamp, pagination } from "../http/schema.ts";
import type { PgBoss } from "../jobs/boss.ts";
import type { OrderStatus } from "../orders/machine.ts";
import type { OrderViewContext } from "../orders/queries.ts";
import { getPartner, partnerView, rotateApiKey, rotateWebhookSecret, updatePartner, withoutSecrets } from "../partners/partners.ts";
import { auditPageSchema, partnerViewSchema } from "../admin/partner-schema.ts";
import { getDeliveryDetail, listPartnerDeliveries, redeliver, type AdminDeliveryRecord } from "../webhooks/deliveries.ts";
import { postWebhook } from "../webhooks/http-sender.ts";
import { webhookHeaders } from "../webhooks/signature.ts";
import { listAudit } from "../partners/audit.ts";
import { csrfTokenOf, hashToken, verifyAgainstNothing, verifyPassword, MIN_PASSWORD_LENGTH } from "./credentials.ts";
import { clearSessionCookie, currentMember, currentSession, memberAudit, sessionGuards, setSessionCookie } from "./guards.ts";
import { acceptInvitation, changeRole, EXPIRED_INVITATION_DAYS, findMemberByEmail, inviteMember, listMembers, memberView, normaliseEmail, removeMember, ROLES, type Member, type Role } from "./members.ts";
import { createSession, deleteSession, signInFailures } from "./sessions.ts";
import { judgeAttempt, refuseWhenExhausted } from "../http/auth-failures.ts";
import { rateLimitAddress } from "../domain/ip-allow-list.ts";
import { limitPerAddress } from "../http/middleware/surface-limits.ts";
import { partnerUsage } from "./usage.ts";
import type { Clock, RateLimits } from "../http/middleware/rate-limit.ts";

export interface DashboardRouteDeps {
  pool: Pool;
  boss: PgBoss;
  checkWebhookUrl: WebhookUrlCheck;
  /** Order detail needs the chain's deposit settings: without a chain the order routes are not served. */
  view: OrderViewContext | undefined;
  webhook: { timeoutMs: number; allowPrivate: boolean };
  /** `Secure` on the session cookie (outside the sandbox). */
  secureCookie: boolean;
  /** The service's own URL, for invitation links (the request's origin when unset). */
  publicUrl?: string;
  /** The rate-limit windows partner authentication counts in (the usage figures read them). */
  rateLimits: RateLimits;
  /** Told of each partner change right after it commits, so this instance's credential cache forgets it at once. */
  partnerChanged: (partnerId: string) => void;
  /** The service's clock: sign-in failures are counted in its 15-minute windows (tests move it). */
  clock: Clock;
}

// A session route may also be refused past its member's per-session budget (http/middleware/surface-limits.ts).
const SESSION_ERRORS = ["UNAUTHORIZED", "CSRF_FAILED", "FORBIDDEN", "RATE_LIMITED"];
/** A change by a member of a partner not in good standing. */
const STANDING_ERRORS = ["PARTNER_INACTIVE", "PARTNER_SUSPENDED"];
const roleSchema = { enum: ROLES } as const;
const memberSchema = {
  type: "object",
  required: ["id", "email", "role", "status", "createdAt", "acceptedAt"],
  properties: {
    id: { type: "string" },
    email: { type: "string" },
    role: roleSchema,
    status: { enum: ["INVITED", "ACTIVE"] },
    createdAt: isoTimestamp,
    acceptedAt: { type: ["string", "null"], format: "date-time" },
  },
} as const;
const nullableNumber = { type: ["number", "null"] } as const;
/** usage.ts partnerUsage: each limit beside what is used of it (null: no limit). */
const usageSchema = {
  type: "object",
  required: ["requests", "users", "volume", "kyc", "revenue"],
  properties: {
    requests: { type: "object", required: ["used", "limit", "resetsAt"], properties: { used: { type: "integer" }, limit: { type: "integer" }, resetsAt: isoTimestamp } },
    users: { type: "object", required: ["count", "limit"], properties: { count: { type: "integer" }, limit: { type: ["integer", "null"] } } },
    volume: {
      type: "object",
      required: ["dayMxn", "dailyLimitMxn", "monthMxn", "monthlyLimitMxn"],
      properties: { dayMxn: { type: "number" }, dailyLimitMxn: nullableNumber, monthMxn: { type: "number" }, monthlyLimitMxn: nullableNumber },
    },
    kyc: {
      type: "object",
      required: ["sessionsThisMonth", "included", "cap", "billedUsd"],
      properties: { sessionsThisMonth: { type: "integer" }, included: { type: "integer" }, cap: { type: ["integer", "null"] }, billedUsd: { type: "number" } },
    },
    revenue: {
      type: "object",
      required: ["feesCollectedUsdc", "serviceShareUsdc", "owedToPartnerUsdc"],
      properties: { feesCollectedUsdc: { type: "number" }, serviceShareUsdc: { type: "number" }, owedToPartnerUsdc: { type: "number" } },
    },
  },
} as const;
const membersSchema = { type: "object", required: ["members"], properties: { members: { type: "array", items: memberSchema } } } as const;
const signedInSchema = {
  type: "object",
  required: ["member", "csrfToken"],
  properties: { member: { ...memberSchema, properties: { ...memberSchema.properties, partnerId: { type: "string" } } }, csrfToken: { type: "string" } },
} as const;
const invitedSchema = {
  type: "object",
  required: ["id", "email", "role", "inviteUrl"],
  properties: { id: { type: "string" }, email: { type: "string" }, role: roleSchema, inviteUrl: { type: "string", format: "uri" } },
} as const;
const inviteBody = {
  type: "object",
  additionalProperties: false,
  required: ["email", "role"],
  properties: { email: { type: "string", format: "email", maxLength: 254 }, role: roleSchema },
} as const;
const pageQuery = { type: "object", additionalProperties: false, properties: pagination } as const;

/** The invitation link: the page reads the token from the fragment, which never reaches a server or a log. */
export function inviteUrl(ctx: AppContext, publicUrl: string | undefined, token: string): string {
  return `${publicUrl ?? ctx.origin}/dashboard#/invitation/${token}`;
}

/** Members are invited the same way by operators and by owners (POST /admin/v1/partners/:id/members, POST /dashboard/v1/members). */
export async function invite(ctx: AppContext, deps: Pick<DashboardRouteDeps, "pool" | "publicUrl">, partnerId: string, body: { email: string; role: Role }, audit: Parameters<typeof inviteMember>[2]) {
  const { member, token } = await inviteMember(deps.pool, { partnerId, email: body.email, role: body.role }, audit);
  ctx.status = 201;
  ctx.body = { id: member.id, email: member.email, role: member.role, inviteUrl: inviteUrl(ctx, deps.publicUrl, token) };
}

function signedIn(member: Member, token: string) {
  return { member: { ...memberView(member), partnerId: member.partnerId }, csrfToken: csrfTokenOf(token) };
}

/** The spec's delivery record (GET /webhooks), without the operator fields. */
function partnerDeliveryRecord(record: AdminDeliveryRecord) {
  const { partnerId: _partner, sequence: _sequence, series: _series, ...rest } = record;
  return rest;
}

/** `/dashboard/v1` (decisions section 18). Each session route carries its own guards: session, CSRF, role. */
export function dashboardRoutes(group: RouteGroup, deps: DashboardRouteDeps): void {
  const { pool } = deps;
  // Sign-in and invitations take no credential: counted per client address (decisions 19).
  const perAddress = limitPerAddress(deps.rateLimits, "dashboard");
  const add = <Body = unknown, Query = unknown>(
    spec: RouteSpec & { role?: Role; whilePartnerInactive?: boolean },
    handler: (ctx: AppContext, input: { body: Body; query: Query; params: Record<string, string> }) => Promise<void>,
  ) => {
    const { role, whilePartnerInactive = false, ...rest } = spec;
    const session = role !== undefined;
    const standingErrors = session && rest.method !== "get" && !whilePartnerInactive ? STANDING_ERRORS : [];
    group.add<Body, Query>(
      {
        ...rest,
        ...(session
          ? { guards: sessionGuards(pool, role, deps.rateLimits, { whilePartnerInactive }), errors: [...SESSION_ERRORS, ...standingErrors, ...(rest.errors ?? [])] }
          : { guards: rest.guards ?? [perAddress] }),
        description: [
          rest.description,
          session ? `Needs a session${rest.method === "get" ? "" : " and X-CSRF-Token"}; role ${role} or above.` : "Needs no session and no CSRF header.",
          standingErrors.length > 0 ? "Refused while the partner is INACTIVE or KYB-suspended." : undefined,
        ]
          .filter(Boolean)
          .join(" "),
      },
      handler,
    );
  };
  const partnerOf = async (ctx: AppContext) => getPartner(pool, currentMember(ctx).partnerId);

  // ------------------------------------------------------------ session

  add<{ email: string; password: string }>(
    {
      method: "post",
      path: "/session",
      tag: "Session",
      summary: "Sign in with email and password",
      description:
        "Sets an HttpOnly, SameSite=Strict session cookie (12 hours). A wrong password and an unknown email answer alike. " +
        "After 5 failures in a 15-minute window for the email or the address, 429 RATE_LIMITED with Retry-After; only failures count, " +
        "so right credentials sent at once are never refused because of each other. Also 429 (Retry-After 1) while too many passwords are being checked.",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["email", "password"],
        properties: { email: { type: "string", minLength: 1, maxLength: 254 }, password: { type: "string", minLength: 1, maxLength: 1024 } },
      },
      responses: { 201: { description: "Signed in", schema: signedInSchema } },
      errors: ["VALIDATION_ERROR", "INVALID_CREDENTIALS", "RATE_LIMITED"],
    },
    async (ctx, { body }) => {
      const buckets = [`signin-email:${normaliseEmail(body.email)}`, `signin-ip:${rateLimitAddress(ctx.ip)}`];
      const failures = signInFailures(deps.clock.now());
      await refuseWhenExhausted(pool, buckets, failures);
      const member = await findMemberByEmail(pool, body.email);
      const valid = member?.passwordHash ? await verifyPassword(body.password, member.passwordHash) : await verifyAgainstNothing(body.password);
      await judgeAttempt(pool, buckets, member && valid ? undefined : new InvalidCredentialsError(), failures);
      if (!member) throw new Error("a sign-in passed without a member"); // judgeAttempt throws the failure
      const { token } = await createSession(pool, member.id);
      setSessionCookie(ctx, token, deps.secureCookie);
      ctx.status = 201;
      ctx.body = signedIn(member, token);
    },
  );

  add(
    {
      method: "get",
      path: "/session",
      role: "VIEWER",
      tag: "Session",
      summary: "The signed-in member and the session's CSRF token (for a page that reloads)",
      responses: { 200: { description: "Signed in", schema: signedInSchema } },
    },
    async (ctx) => {
      const { member, token } = currentSession(ctx);
      ctx.body = signedIn(member, token);
    },
  );

  add(
    {
      method: "delete",
      path: "/session",
      role: "VIEWER",
      whilePartnerInactive: true,
      tag: "Session",
      summary: "Sign out: the session ends on the server, so the old cookie stops working",
      responses: { 204: { description: "Signed out" } },
    },
    async (ctx) => {
      await deleteSession(pool, currentSession(ctx).token);
      clearSessionCookie(ctx, deps.secureCookie);
      ctx.status = 204;
    },
  );

  // The token is in the path: the request log shows the route instead.
  const hideToken: Koa.Middleware<AppState> = async (ctx, next) => {
    ctx.state.logPath = "/dashboard/v1/invitations/:token";
    await next();
  };
  group.add<{ password: string }>(
    {
      method: "post",
      path: "/invitations/:token",
      tag: "Session",
      summary: "Accept an invitation: set the password, and be signed in",
      description: `Password at least ${MIN_PASSWORD_LENGTH} characters. Unknown or used invitation 404, past 72 hours 410 (an expired invitation is removed ${EXPIRED_INVITATION_DAYS} days later, then 404); both are failures, throttled like sign-in (per address and per invitation), and answered before the password is hashed. Needs no session and no CSRF header.`,
      guards: [hideToken, perAddress],
      body: {
        type: "object",
        additionalProperties: false,
        required: ["password"],
        properties: { password: { type: "string", minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 } },
      },
      responses: { 201: { description: "Signed in", schema: signedInSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVITATION_EXPIRED", "RATE_LIMITED"],
    },
    async (ctx, { body, params }) => {
      const token = params.token!;
      const buckets = [`invite-ip:${rateLimitAddress(ctx.ip)}`, `invite-token:${hashToken(token).toString("hex")}`];
      const failures = signInFailures(deps.clock.now());
      await refuseWhenExhausted(pool, buckets, failures);
      // An unknown, used or expired invitation is a failed guess; it is judged before the password is hashed.
      const member = await acceptInvitation(pool, { token, password: body.password, address: ctx.ip }, (problem) => judgeAttempt(pool, buckets, problem, failures));
      const session = await createSession(pool, member.id);
      setSessionCookie(ctx, session.token, deps.secureCookie);
      ctx.status = 201;
      ctx.body = signedIn(member, session.token);
    },
  );

  // ------------------------------------------------------------ partner, key, allow-list, webhook

  add(
    {
      method: "get",
      path: "/partner",
      role: "VIEWER",
      tag: "Partner",
      summary: "The partner as its members see it (the admin API's field names; never keys or secrets)",
      responses: { 200: { description: "Partner", schema: partnerViewSchema } },
    },
    async (ctx) => {
      ctx.body = partnerView(withoutSecrets(await partnerOf(ctx)));
    },
  );

  add(
    {
      method: "post",
      path: "/api-keys",
      role: "DEVELOPER",
      tag: "Partner",
      summary: "Issue a new API key, shown this once; the old key stops working at once",
      responses: { 201: { description: "The new key", schema: { type: "object", required: ["apiKey"], properties: { apiKey: { type: "string" } } } } },
    },
    async (ctx) => {
      const { apiKey } = await rotateApiKey(pool, currentMember(ctx).partnerId, memberAudit(ctx));
      deps.partnerChanged(currentMember(ctx).partnerId);
      ctx.status = 201;
      ctx.body = { apiKey };
    },
  );

  add<{ entries: string[] }>(
    {
      method: "put",
      path: "/ip-allow-list",
      role: "OWNER",
      tag: "Partner",
      summary: "Replace the IP allow-list of the API key (addresses and CIDR ranges, IPv4 and IPv6; empty allows all)",
      description: "The allow-list guards the API key, not dashboard sessions.",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["entries"],
        properties: { entries: { type: "array", maxItems: 100, items: { type: "string", maxLength: 64 } } },
      },
      responses: { 200: { description: "Partner", schema: partnerViewSchema } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { body }) => {
      for (const entry of body.entries) {
        if (!isValidAllowListEntry(entry)) throw new ValidationError(`"entries" entry "${entry}" is not an IP address or CIDR range`);
      }
      ctx.body = partnerView(await updatePartner(pool, currentMember(ctx).partnerId, { ipAllowList: body.entries }, memberAudit(ctx)));
      deps.partnerChanged(currentMember(ctx).partnerId);
    },
  );

  add<{ url: string | null }>(
    {
      method: "put",
      path: "/webhook",
      role: "DEVELOPER",
      tag: "Webhook",
      summary: "Set the webhook URL (https, public address; null removes it)",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["url"],
        properties: { url: { type: ["string", "null"], format: "uri", maxLength: 2048 } },
      },
      responses: { 200: { description: "Partner", schema: partnerViewSchema } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { body }) => {
      if (body.url) deps.checkWebhookUrl(body.url);
      ctx.body = partnerView(await updatePartner(pool, currentMember(ctx).partnerId, { webhookUrl: body.url }, memberAudit(ctx)));
      deps.partnerChanged(currentMember(ctx).partnerId);
    },
  );

  add(
    {
      method: "post",
      path: "/webhook-secret",
      role: "DEVELOPER",
      tag: "Webhook",
      summary: "Issue a new webhook secret, shown this once; every attempt from now on is signed with it",
      responses: { 201: { description: "The new secret", schema: { type: "object", required: ["webhookSecret"], properties: { webhookSecret: { type: "string" } } } } },
    },
    async (ctx) => {
      const { webhookSecret } = await rotateWebhookSecret(pool, currentMember(ctx).partnerId, memberAudit(ctx));
      deps.partnerChanged(currentMember(ctx).partnerId);
      ctx.status = 201;
      ctx.body = { webhookSecret };
    },
  );

  add(
    {
      method: "post",
      path: "/webhook/test",
      role: "DEVELOPER",
      tag: "Webhook",
      summary: "Send a signed `webhook.test` event to the webhook URL now",
      description:
        "Signed and sent like every delivery (X-Webhook-Id, X-Webhook-Timestamp, X-Webhook-Signature), body `{ event: \"webhook.test\", timestamp, data: { partnerId } }`. " +
        "One attempt, no delivery record, no retry; 200 whatever the endpoint did (statusCode null when it could not be reached).",
      responses: {
        200: {
          description: "The attempt's outcome",
          schema: {
            type: "object",
            required: ["delivered", "statusCode", "durationMs", "error"],
            properties: { delivered: { type: "boolean" }, statusCode: { type: ["integer", "null"] }, durationMs: { type: "integer" }, error: { type: ["string", "null"] } },
          },
        },
      },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx) => {
      const partner = await partnerOf(ctx);
      if (!partner.webhookUrl) throw new ValidationError("Set a webhook URL first");
      const at = new Date();
      const body = JSON.stringify({ event: "webhook.test", timestamp: at.toISOString(), data: { partnerId: partner.id } });
      const started = performance.now();
      const outcome = await postWebhook({
        url: partner.webhookUrl,
        body,
        headers: webhookHeaders(newId("whd"), partner.webhookSecret, at, body),
        timeoutMs: deps.webhook.timeoutMs,
        allowPrivate: deps.webhook.allowPrivate,
      });
      ctx.body = { delivered: outcome.ok, statusCode: outcome.status, durationMs: Math.round(performance.now() - started), error: outcome.errorMessage };
    },
  );

  // ------------------------------------------------------------ deliveries

  add<unknown, DeliveryQuery>(
    {
      method: "get",
      path: "/deliveries",
      role: "VIEWER",
      tag: "Webhook",
      summary: "The delivery log: the filters, envelope and records of GET /webhooks",
      ...deliveryListSpec,
    },
    async (ctx, { query }) => {
      ctx.body = await listPartnerDeliveries(pool, currentMember(ctx).partnerId, query);
    },
  );

  add(
    {
      method: "get",
      path: "/deliveries/:id",
      role: "VIEWER",
      tag: "Webhook",
      summary: "One delivery with every attempt: status code, duration and error",
      responses: { 200: { description: "Delivery with `attempts`", schema: memberDeliveryDetailSchema } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      const detail = await getDeliveryDetail(pool, params.id!);
      if (detail.partnerId !== currentMember(ctx).partnerId) throw new NotFoundError(`Delivery ${params.id} does not exist`);
      const { body, attemptLog, ...record } = detail;
      ctx.body = {
        ...partnerDeliveryRecord(record),
        body,
        attempts: attemptLog.map((attempt) => ({
          series: attempt.series,
          attempt: attempt.attempt,
          startedAt: attempt.startedAt,
          durationMs: new Date(attempt.finishedAt).getTime() - new Date(attempt.startedAt).getTime(),
          statusCode: attempt.responseStatus,
          error: attempt.errorMessage,
        })),
      };
    },
  );

  add(
    {
      method: "post",
      path: "/deliveries/:id/redeliver",
      role: "DEVELOPER",
      tag: "Webhook",
      summary: "Send a delivery again: a new attempt series with the same id and body",
      responses: { 202: { description: "The delivery record, reset", schema: deliveryRecordSchema } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      const record = await redeliver(pool, deps.boss, params.id!, { partnerId: currentMember(ctx).partnerId, audit: memberAudit(ctx) });
      ctx.status = 202;
      ctx.body = partnerDeliveryRecord(record);
    },
  );

  // ------------------------------------------------------------ orders

  const view = deps.view;
  if (view) {
    add<unknown, { status?: OrderStatus; partnerUserRef?: string; limit: number; offset: number }>(
      {
        method: "get",
        path: "/orders",
        role: "VIEWER",
        tag: "Orders",
        summary: "The partner's orders as GET /orders shows them, newest first",
        query: orderListQuery,
        responses: { 200: { description: "Page of orders", schema: orderPageSchema } },
        errors: ["VALIDATION_ERROR"],
      },
      async (ctx, { query }) => {
        ctx.body = await partnerOrderPage(pool, currentMember(ctx).partnerId, query);
      },
    );

    add(
      {
        method: "get",
        path: "/orders/:id",
        role: "VIEWER",
        tag: "Orders",
        summary: "One order with its timeline, as GET /orders/:id shows it",
        responses: { 200: { description: "Order detail", schema: orderDetailSchema } },
        errors: ["NOT_FOUND"],
      },
      async (ctx, { params }) => {
        ctx.body = await orderDetail({ pool, view }, currentMember(ctx).partnerId, params.id!);
      },
    );
  }

  // ------------------------------------------------------------ usage and audit log

  add(
    {
      method: "get",
      path: "/usage",
      role: "VIEWER",
      tag: "Usage",
      summary: "Requests this minute, users, day and month volume, KYC sessions and revenue, with their limits (null: unlimited)",
      description: "Read by the same code that enforces each limit. Dashboard requests are not counted in the API rate limit.",
      responses: { 200: { description: "Usage", schema: usageSchema } },
    },
    async (ctx) => {
      ctx.body = await partnerUsage(pool, deps.rateLimits, withoutSecrets(await partnerOf(ctx)));
    },
  );

  add<unknown, { limit: number; offset: number }>(
    {
      method: "get",
      path: "/audit-log",
      role: "VIEWER",
      tag: "Audit log",
      summary: "Every change to the partner, by its members or by operators: what, who, when, from which address; newest first",
      query: pageQuery,
      responses: { 200: { description: "Page envelope of `entries`", schema: auditPageSchema } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      ctx.body = await listAudit(pool, currentMember(ctx).partnerId, query);
    },
  );

  // ------------------------------------------------------------ members

  add(
    {
      method: "get",
      path: "/members",
      role: "VIEWER",
      tag: "Members",
      summary: "The partner's members; invitees not yet accepted are INVITED",
      responses: { 200: { description: "Members", schema: membersSchema } },
    },
    async (ctx) => {
      ctx.body = { members: (await listMembers(pool, currentMember(ctx).partnerId)).map(memberView) };
    },
  );

  add<{ email: string; role: Role }>(
    {
      method: "post",
      path: "/members",
      role: "OWNER",
      tag: "Members",
      summary: "Invite a member (valid 72 hours); answers like the admin route",
      body: inviteBody,
      responses: { 201: { description: "The invitation", schema: invitedSchema } },
      errors: ["VALIDATION_ERROR", "MEMBER_EXISTS"],
    },
    async (ctx, { body }) => {
      await invite(ctx, deps, currentMember(ctx).partnerId, body, memberAudit(ctx));
    },
  );

  add<{ role: Role }>(
    {
      method: "patch",
      path: "/members/:id",
      role: "OWNER",
      tag: "Members",
      summary: "Change a member's role (the last OWNER cannot be demoted)",
      body: { type: "object", additionalProperties: false, required: ["role"], properties: { role: roleSchema } },
      responses: { 200: { description: "Member", schema: memberSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "LAST_OWNER"],
    },
    async (ctx, { body, params }) => {
      ctx.body = memberView(await changeRole(pool, currentMember(ctx).partnerId, params.id!, body.role, memberAudit(ctx)));
    },
  );

  add(
    {
      method: "delete",
      path: "/members/:id",
      role: "OWNER",
      tag: "Members",
      summary: "Remove a member; its sessions end (the last OWNER cannot be removed)",
      responses: { 204: { description: "Removed" } },
      errors: ["NOT_FOUND", "LAST_OWNER"],
    },
    async (ctx, { params }) => {
      await removeMember(pool, currentMember(ctx).partnerId, params.id!, memberAudit(ctx));
      ctx.status = 204;
    },
  );
}

export { inviteBody, invitedSchema, membersSchema };
