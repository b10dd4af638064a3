// A partner's webhook endpoint for the offramp's deliveries (docs/webhooks.md).
// Run: WEBHOOK_SECRET=whsec_... PORT=8080 node docs/examples/webhook-receiver.ts
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import { fileURLToPath } from "node:url";

// #region verify
/** Deliveries whose X-Webhook-Timestamp is further than this from our clock are refused (replay guard). */
export const TOLERANCE_SECONDS = 300;

export interface WebhookEvent {
  event: string;
  timestamp: string;
  data: { orderId: string; status: string; partnerUserRef: string; sequence: number; [field: string]: unknown };
}

export type Verdict = "ok" | "stale" | "bad-signature";

/**
 * Checks one delivery. `rawBody` is the body exactly as received: never a re-serialized JSON object.
 * `secrets` are the webhook secrets accepted right now (the current one, plus the previous one for a
 * while after a rotation), each used whole, `whsec_` included.
 */
export function verifyWebhook(options: {
  rawBody: Buffer;
  timestamp: string | undefined;
  signature: string | undefined;
  secrets: string[];
  nowSeconds?: number;
}): Verdict {
  const { rawBody, timestamp, signature, secrets } = options;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || Math.abs(now - Number(timestamp)) > TOLERANCE_SECONDS) return "stale";
  if (!signature || !/^[0-9a-f]{64}$/.test(signature)) return "bad-signature";
  const received = Buffer.from(signature, "hex");
  for (const secret of secrets) {
    const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest();
    if (timingSafeEqual(expected, received)) return "ok";
  }
  return "bad-signature";
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
      const rawBody = Buffer.concat(chunks);
      const verdict = verifyWebhook({
        rawBody,
        timestamp: req.headers["x-webhook-timestamp"] as string | undefined,
        signature: req.headers["x-webhook-signature"] as string | undefined,
        secrets: options.secrets,
      });
      if (verdict === "stale") return void res.writeHead(400).end("stale or missing timestamp");
      if (verdict === "bad-signature") return void res.writeHead(401).end("bad signature");
      res.writeHead(200).end();
      // Acknowledge first, work after: a slow handler must not make the delivery time out and repeat.
      const deliveryId = String(req.headers["x-webhook-id"]);
      setImmediate(() => {
        Promise.resolve()
          .then(() => options.onEvent(JSON.parse(rawBody.toString("utf8")) as WebhookEvent, deliveryId))
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
