// A partner's webhook endpoint for the offramp's deliveries (docs/webhooks.md), checked by the SDK's
// verifyWebhook (in your code: `import { verifyWebhook, WebhookVerificationError } from "@offramp/sdk"`).
// Run: WEBHOOK_SECRET=whsec_... PORT=8080 node docs/examples/webhook-receiver.ts
import http from "node:http";
import { fileURLToPath } from "node:url";
import { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders } from "../../sdk/src/index.ts";

export type { WebhookEvent };

// #region verify
/** What the check made of a delivery: "ok", or why it was refused. */
export type Verdict = "ok" | WebhookVerificationError["reason"];

/**
 * One delivery's answer: 200 with its event, 400 for a timestamp missing or more than 300 s from our
 * clock, 401 for a signature that none of `secrets` gives. `rawBody` is the body exactly as received,
 * never a re-serialized JSON object; `secrets` are the webhook secrets accepted right now (the current
 * one, plus the previous one for a while after a rotation), each used whole, `whsec_` included.
 */
export function checkDelivery(
  rawBody: Buffer,
  headers: WebhookHeaders,
  secrets: string[],
): { status: 200; event: WebhookEvent } | { status: 400 | 401; verdict: Exclude<Verdict, "ok"> } {
  try {
    return { status: 200, event: verifyWebhook(rawBody, headers, secrets) };
  } catch (error) {
    if (error instanceof WebhookVerificationError) return { status: error.status, verdict: error.reason };
    throw error;
  }
}
// #endregion verify

/**
 * The endpoint: reads the raw body, answers 400 for a stale timestamp, 401 for a bad signature, 200 at
 * once for a good delivery, and only then hands the event to `onEvent`. A delivery can arrive more than
 * once (same X-Webhook-Id), so `onEvent` should ignore an id it has already processed.
 */
export function createWebhookReceiver(options: {
  secrets: string[];
  onEvent: (event: WebhookEvent, deliveryId: string) => void | Promise<void>;
  maxBodyBytes?: number;
}): http.Server {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  return http.createServer((req, res) => {
    if (req.method !== "POST") return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) req.destroy();
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const checked = checkDelivery(Buffer.concat(chunks), req.headers, options.secrets);
      if (checked.status !== 200) return void res.writeHead(checked.status).end(checked.verdict === "stale" ? "stale or missing timestamp" : "bad signature");
      res.writeHead(200).end();
      // Acknowledge first, work after: a slow handler must not make the delivery time out and repeat.
      const deliveryId = String(req.headers["x-webhook-id"]);
      setImmediate(() => {
        Promise.resolve()
          .then(() => options.onEvent(checked.event, deliveryId))
          .catch((error: unknown) => console.error(`webhook ${deliveryId} failed in processing`, error));
      });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) throw new Error("Set WEBHOOK_SECRET to the secret shown when the partner was created");
  const seen = new Set<string>();
  const server = createWebhookReceiver({
    secrets: [secret],
    onEvent: (event, deliveryId) => {
      if (seen.has(deliveryId)) return;
      seen.add(deliveryId);
      console.log(`${event.event} #${event.data.sequence} for ${event.data.orderId}: ${event.data.status}`);
    },
  });
  server.listen(Number(process.env.PORT ?? 8080), () => console.log(`listening on ${JSON.stringify(server.address())}`));
}
