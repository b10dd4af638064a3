import { operatorAudit } from "../partners/audit.ts";
import type { Pool } from "../db/pool.ts";
import { ValidationError } from "../domain/errors.ts";
import { isValidAllowListEntry } from "../domain/ip-allow-list.ts";
import { TIERS } from "../domain/tiers.ts";
import type { WebhookUrlCheck } from "../webhooks/url-guard.ts";
import type { RouteGroup } from "../http/routes.ts";
import { pageSchema, pagination } from "../http/schema.ts";
import { partnerViewSchema, partnerWithSecretsSchema } from "./partner-schema.ts";
import {
  createPartner,
  getPartner,
  listPartners,
  partnerView,
  rotateApiKey,
  rotateWebhookSecret,
  updatePartner,
  withoutSecrets,
  type NewPartner,
  type PartnerChanges,
} from "../partners/partners.ts";
import { pageOf } from "../db/filters.ts";

const nullableCount = { type: ["integer", "null"], minimum: 0 } as const;
const nullableAmount = { type: ["number", "null"], minimum: 0 } as const;
const limitsSchema = {
  type: "object",
  additionalProperties: false,
  description: "ENTERPRISE overrides; null means unlimited",
  properties: {
    requestsPerMinute: { type: "integer", minimum: 1, maximum: 100000 },
    maxUsers: nullableCount,
    monthlyVolumeMxn: nullableAmount,
    dailyVolumeMxn: nullableAmount,
    kycIncludedPerMonth: { type: "integer", minimum: 0 },
    kycCapPerMonth: nullableCount,
    revenueSharePercent: { type: "number", minimum: 0, maximum: 100, "x-maxDecimals": 2 },
  },
} as const;
const walletSchema = { type: ["string", "null"], pattern: "^0x[0-9a-fA-F]{40}$" } as const;
const webhookUrlSchema = { type: ["string", "null"], format: "uri", maxLength: 2048 } as const;
const ipListSchema = { type: "array", maxItems: 100, items: { type: "string", maxLength: 64 } } as const;


function checkCommon(body: { ipAllowList?: string[]; webhookUrl?: string | null }, checkWebhookUrl: WebhookUrlCheck): void {
  for (const entry of body.ipAllowList ?? []) {
    if (!isValidAllowListEntry(entry)) throw new ValidationError(`"ipAllowList" entry "${entry}" is not an IP address or CIDR range`);
  }
  if (body.webhookUrl) checkWebhookUrl(body.webhookUrl);
}

/** `partnerChanged`: told of each change right after it commits, so this instance's credential cache forgets it at once. */
export function adminPartnerRoutes(admin: RouteGroup, deps: { pool: Pool; checkWebhookUrl: WebhookUrlCheck; partnerChanged: (partnerId: string) => void }): void {
  const { pool } = deps;

  admin.add<NewPartner>(
    {
      method: "post",
      path: "/partners",
      tag: "Partners",
      summary: "Create a partner; its API key and webhook secret are shown this once",
      body: {
        type: "object",
        additionalProperties: false,
        required: ["name", "tier", "kycModel"],
        properties: {
          name: { type: "string", minLength: 1, maxLength: 200 },
          tier: { enum: TIERS },
          kycModel: { enum: ["PARTNER_MANAGED", "SERVICE_PROVIDED"] },
          webhookUrl: webhookUrlSchema,
          ipAllowList: ipListSchema,
          feeWallet: walletSchema,
          limits: limitsSchema,
        },
      },
      responses: { 201: { description: "Partner, with apiKey and webhookSecret", schema: partnerWithSecretsSchema("apiKey", "webhookSecret") } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { body }) => {
      checkCommon(body, deps.checkWebhookUrl);
      const created = await createPartner(pool, body, operatorAudit(ctx.ip));
      ctx.status = 201;
      ctx.body = { ...partnerView(created.partner), apiKey: created.apiKey, webhookSecret: created.webhookSecret };
    },
  );

  admin.add<unknown, { limit: number; offset: number }>(
    {
      method: "get",
      path: "/partners",
      tag: "Partners",
      summary: "List partners (never keys or secrets)",
      query: { type: "object", additionalProperties: false, properties: pagination },
      responses: { 200: { description: "Partners", schema: pageSchema("partners", partnerViewSchema) } },
      errors: ["VALIDATION_ERROR"],
    },
    async (ctx, { query }) => {
      const { partners, total } = await listPartners(pool, query.limit, query.offset);
      ctx.body = pageOf("partners", partners.map(partnerView), total, query);
    },
  );

  admin.add(
    { method: "get", path: "/partners/:id", tag: "Partners", summary: "One partner", responses: { 200: { description: "Partner", schema: partnerViewSchema } }, errors: ["NOT_FOUND"] },
    async (ctx, { params }) => {
      ctx.body = partnerView(withoutSecrets(await getPartner(pool, params.id!)));
    },
  );

  admin.add<PartnerChanges>(
    {
      method: "patch",
      path: "/partners/:id",
      tag: "Partners",
      summary: "Change a partner's status, KYB status, tier, webhook URL, allow-list, fee wallet or limits",
      body: {
        type: "object",
        additionalProperties: false,
        minProperties: 1,
        properties: {
          name: { type: "string", minLength: 1, maxLength: 200 },
          status: { enum: ["ACTIVE", "INACTIVE"] },
          kybStatus: { enum: ["APPROVED", "SUSPENDED"] },
          tier: { enum: TIERS },
          webhookUrl: webhookUrlSchema,
          ipAllowList: ipListSchema,
          feeWallet: walletSchema,
          limits: limitsSchema,
        },
      },
      responses: { 200: { description: "Partner", schema: partnerViewSchema } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    },
    async (ctx, { body, params }) => {
      checkCommon(body, deps.checkWebhookUrl);
      ctx.body = partnerView(await updatePartner(pool, params.id!, body, operatorAudit(ctx.ip)));
      deps.partnerChanged(params.id!);
    },
  );

  admin.add(
    {
      method: "post",
      path: "/partners/:id/api-keys",
      tag: "Partners",
      summary: "Issue a new API key; the old one stops working at once",
      responses: { 201: { description: "Partner with the new apiKey", schema: partnerWithSecretsSchema("apiKey") } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      const { partner, apiKey } = await rotateApiKey(pool, params.id!, operatorAudit(ctx.ip));
      deps.partnerChanged(params.id!);
      ctx.status = 201;
      ctx.body = { ...partnerView(partner), apiKey };
    },
  );

  admin.add(
    {
      method: "post",
      path: "/partners/:id/webhook-secret",
      tag: "Partners",
      summary: "Issue a new webhook secret; new delivery attempts are signed with it",
      responses: { 201: { description: "Partner with the new webhookSecret", schema: partnerWithSecretsSchema("webhookSecret") } },
      errors: ["NOT_FOUND"],
    },
    async (ctx, { params }) => {
      const { partner, webhookSecret } = await rotateWebhookSecret(pool, params.id!, operatorAudit(ctx.ip));
      deps.partnerChanged(params.id!);
      ctx.status = 201;
      ctx.body = { ...partnerView(partner), webhookSecret };
    },
  );
}
