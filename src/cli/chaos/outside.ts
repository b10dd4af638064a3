// The outside world of `npm run chaos`, served by the harness itself so it outlives the service:
// - the partners' webhook endpoints (/webhooks/<partner label>): every delivery is recorded with its
//   signature checked by the documented partner check (docs/examples/webhook-receiver.ts); a "flaky"
//   partner's endpoint answers 500 during outage windows, then recovers;
// - the central bank's CEP portal (/cep), the sandbox simulator of src/sandbox/simulators/cep-portal.ts.
//   The service's own simulator lives in its memory and would forget every payment at each kill, so the
//   harness records payments here and the service reaches it through CEP_URL, as it reaches the real one.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Router } from "@koa/router";
import Koa from "koa";
import { checkDelivery, type Verdict } from "../../../docs/examples/webhook-receiver.ts";
import { createCepPortalSimulator, type CepPortalSimulator } from "../../sandbox/simulators/cep-portal.ts";

export interface Delivery {
  /** X-Webhook-Id: the delivery id, the same on every attempt. */
  webhookId: string;
  partner: string;
  at: number;
  answered: number;
  verdict: Verdict;
  rawBody: string;
  event: string | undefined;
  orderId: string | undefined;
  sequence: number | undefined;
}

export interface Outage {
  /** ms since the receiver started. */
  from: number;
  to: number;
}

export interface Outside {
  url: string;
  cepUrl: string;
  cep: CepPortalSimulator;
  webhookUrl(partner: string): string;
  /** The partner's secret, for the signature check (set once the partner is created). */
  setSecret(partner: string, secret: string): void;
  /** Outage windows of a flaky partner's endpoint (500 inside them). */
  setOutages(partner: string, outages: Outage[]): void;
  deliveries: Delivery[];
  close(): Promise<void>;
}

export async function startOutside(): Promise<Outside> {
  const started = Date.now();
  const secrets = new Map<string, string>();
  const outages = new Map<string, Outage[]>();
  const deliveries: Delivery[] = [];
  const cep = createCepPortalSimulator();
  const app = new Koa();
  const mount = new Router({ prefix: "/cep" });
  mount.use(cep.router.routes(), cep.router.allowedMethods());
  app.use(mount.routes());

  const server = http.createServer((request, response) => {
    const match = /^\/webhooks\/([\w-]+)$/.exec(request.url ?? "");
    if (!match || request.method !== "POST") {
      void app.callback()(request, response);
      return;
    }
    const partner = match[1]!;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const rawBody = Buffer.concat(chunks);
      const now = Date.now();
      const down = (outages.get(partner) ?? []).some((window) => now - started >= window.from && now - started < window.to);
      const header = (name: string) => {
        const value = request.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const secret = secrets.get(partner);
      const checked = checkDelivery(rawBody, request.headers, secret ? [secret] : []);
      const verdict: Verdict = checked.status === 200 ? "ok" : checked.verdict;
      const answered = down ? 500 : checked.status;
      let parsed: { event?: string; data?: { orderId?: string; sequence?: number } } = {};
      try {
        parsed = JSON.parse(rawBody.toString("utf8")) as typeof parsed;
      } catch {
        // recorded with its verdict; the checks report it
      }
      deliveries.push({
        webhookId: header("x-webhook-id") ?? "",
        partner,
        at: now,
        answered,
        verdict,
        rawBody: rawBody.toString("utf8"),
        event: parsed.event,
        orderId: parsed.data?.orderId,
        sequence: parsed.data?.sequence,
      });
      response.writeHead(answered, { "content-type": "text/plain" }).end(answered === 200 ? "ok" : "no");
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    cepUrl: `${url}/cep`,
    cep,
    webhookUrl: (partner) => `${url}/webhooks/${partner}`,
    setSecret: (partner, secret) => secrets.set(partner, secret),
    setOutages: (partner, windows) => outages.set(partner, windows),
    deliveries,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
