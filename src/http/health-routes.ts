import { currentPartner } from "./context.ts";
import type { RouteGroup } from "./routes.ts";
import { isoTimestamp } from "./schema.ts";

export function healthRoutes(api: RouteGroup): void {
  api.add(
    {
      method: "get",
      path: "/health",
      tag: "Health",
      summary: "Check the API key and see the partner it belongs to",
      responses: {
        200: {
          description: "Authenticated",
          schema: {
            type: "object",
            properties: {
              status: { const: "ok" },
              partner: { type: "string" },
              tier: { enum: ["FREE", "GROWTH", "ENTERPRISE"] },
              timestamp: isoTimestamp,
            },
          },
        },
      },
    },
    async (ctx) => {
      const partner = currentPartner(ctx);
      ctx.body = { status: "ok", partner: partner.name, tier: partner.tier, timestamp: new Date().toISOString() };
    },
  );
}
