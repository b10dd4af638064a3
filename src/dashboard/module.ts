import path from "node:path";
import { fileURLToPath } from "node:url";
import type Router from "@koa/router";
import type { Surface } from "../http/app.ts";
import type { AppState } from "../http/context.ts";
import { buildOpenApiDocument } from "../http/openapi.ts";
import { staticPageRouter } from "../http/static-page.ts";
import { ordersBrowserModule } from "../orders/browser-module.ts";
import { RouteGroup } from "../http/routes.ts";
import { pagination } from "../http/schema.ts";
import { getPartner } from "../partners/partners.ts";
import { listAudit, operatorAudit } from "../partners/audit.ts";
import { SESSION_COOKIE } from "./guards.ts";
import { listMembers, memberView, removeMember, type Role } from "./members.ts";
import { dashboardRoutes, invite, inviteBody, invitedSchema, membersSchema, type DashboardRouteDeps } from "./routes.ts";
import { auditPageSchema } from "../admin/partner-schema.ts";

export const DASHBOARD_PREFIX = "/dashboard/v1";

/**
 * The partner dashboard (decisions section 18): its own route group under /dashboard/v1, with no group
 * guard (sign-in and invitations need no session) and each session route's own guards; its own OpenAPI
 * document; the web page; and the operators' routes to invite members and read a partner's audit log.
 */
export function dashboardModule(deps: DashboardRouteDeps): Surface {
  const group = new RouteGroup({ prefix: DASHBOARD_PREFIX, security: "none", guards: [] });
  dashboardRoutes(group, deps);
  return {
    routes: ({ admin }) => adminDashboardRoutes(admin, deps),
    routers: [pageRouter()],
    api: { documentUrl: `${DASHBOARD_PREFIX}/openapi.json`, document: dashboardDocument(group), middleware: group.middleware() },
  };
}

/** The document of the dashboard group, with the session cookie and the CSRF header where they apply. */
function dashboardDocument(group: RouteGroup) {
  const document = buildOpenApiDocument({ title: "Offramp partner dashboard API", version: "1.0.0", serverUrl: DASHBOARD_PREFIX, groups: [group] });
  for (const spec of group.specs) {
    // Session routes are those that can answer UNAUTHORIZED (sign-in and invitations have guards too: their per-address limit).
    if (!spec.errors?.includes("UNAUTHORIZED")) continue;
    const operation = document.paths[spec.path.replace(/:([A-Za-z_]+)/g, "{$1}")]![spec.method] as { security?: unknown; parameters: unknown[] };
    operation.security = [{ session: [] }];
    if (spec.method !== "get") {
      operation.parameters.push({ name: "X-CSRF-Token", in: "header", required: true, schema: { type: "string" }, description: "The session's csrfToken" });
    }
  }
  Object.assign(document.components, { securitySchemes: { session: { type: "apiKey", in: "cookie", name: SESSION_COOKIE } } });
  return document;
}

function adminDashboardRoutes(admin: RouteGroup, deps: Pick<DashboardRouteDeps, "pool" | "publicUrl">): void {
  const { pool } = deps;
  admin.add<{ email: string; role: Role }>(
    {
      method: "post",
      path: "/partners/:id/members",
      tag: "Partners",
      summary: "Invite a member of the partner's dashboard; the invitation is valid 72 hours",
      description: "`inviteUrl` holds the invitation token, shown this once.",
      body: inviteBody,
      responses: { 201: { description: "The invitation", schema: invitedSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "MEMBER_EXISTS"],
    },
    async (ctx, { body, params }) => {
      await invite(ctx, deps, params.id!, body, operatorAudit(ctx.ip));
    },
  );

  admin.add(
    { method: "get", path: "/partners/:id/members", tag: "Partners", summary: "The partner's dashboard members", responses: { 200: { description: "Members", schema: membersSchema } }, errors: ["NOT_FOUND"] },
    async (ctx, { params }) => {
      await getPartner(pool, params.id!);
      ctx.body = { members: (await listMembers(pool, params.id!)).map(memberView) };
    },
  );

  // Emails are unique across the service and nothing proves an invitee owns theirs: an owner could take
  // an address another partner's member needs. Operators remove such a member (the last OWNER stays).
  admin.add(
    {
      method: "delete",
      path: "/partners/:id/members/:memberId",
      tag: "Partners",
      summary: "Remove a member of the partner's dashboard (or an invitation); its sessions end and its email is free again",
      responses: { 204: { description: "Removed" } },
      errors: ["NOT_FOUND", "LAST_OWNER"],
    },
    async (ctx, { params }) => {
      await getPartner(pool, params.id!);
      await removeMember(pool, params.id!, params.memberId!, operatorAudit(ctx.ip));
      ctx.status = 204;
    },
  );

  admin.add<unknown, { limit: number; offset: number }>(
    {
      method: "get",
      path: "/partners/:id/audit-log",
      tag: "Partners",
      summary: "Every change to the partner, by its members or by operators, newest first",
      query: { type: "object", additionalProperties: false, properties: pagination },
      responses: { 200: { description: "Page envelope of `entries`", schema: auditPageSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { params, query }) => {
      await getPartner(pool, params.id!);
      ctx.body = await listAudit(pool, params.id!, query);
    },
  );
}

// ---------------------------------------------------------------- the page

const publicDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "public");

/** The page at /dashboard: nothing inline at all (bars are sized through the CSSOM). */
function pageRouter(): Router<AppState> {
  return staticPageRouter({ path: "/dashboard", publicDir, assets: ["dashboard.js", "dashboard.css"], generatedAssets: [ordersBrowserModule] });
}
