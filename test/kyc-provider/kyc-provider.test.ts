import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import Router from "@koa/router";
import { bodyParser } from "@koa/bodyparser";
import {
  createKycProviderClient,
  KycCallbackPayloadError,
  KycCallbackSignatureError,
  KycProviderError,
  type KycProviderClient,
} from "../../src/integrations/kyc-provider.ts";
import {
  createKycProviderSimulator,
  KycSimulatorError,
  type KycProviderSimulator,
} from "../../src/sandbox/simulators/kyc-provider.ts";

const API_KEY = "5b0a4a2e-7f3c-4c55-9d0e-0c6f2f8f6a11";
const SECRET = "8c1f0b8e-3a7d-4f7e-a1c2-6b9d2e4f5a77";

interface Delivery {
  raw: Buffer;
  headers: IncomingHttpHeaders;
}

async function listen(handler: Koa | Server): Promise<{ server: Server; url: string }> {
  const server = handler instanceof Koa ? createServer(handler.callback()) : handler;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}` };
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}

function sign(body: string, secret = SECRET): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

/** Builds a provider app hosting the simulator under /simulators/kyc, optionally behind a global body parser. */
function providerApp(sim: KycProviderSimulator, withBodyParser: boolean): Koa {
  const app = new Koa();
  if (withBodyParser) app.use(bodyParser());
  const root = new Router();
  root.use("/simulators/kyc", sim.router.routes(), sim.router.allowedMethods());
  app.use(root.routes()).use(root.allowedMethods());
  return app;
}

describe("KYC provider adapter (Veriff) against the simulator", () => {
  const deliveries: Delivery[] = [];
  let receiverStatus = 200;
  let receiver: { server: Server; url: string };
  let provider: { server: Server; url: string };
  let parsedProvider: { server: Server; url: string };
  let sim: KycProviderSimulator;
  let client: KycProviderClient;

  before(async () => {
    const rx = new Koa();
    rx.use(async (ctx) => {
      if (ctx.method !== "POST" || ctx.path !== "/kyc/callback") return;
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      deliveries.push({ raw: Buffer.concat(chunks), headers: ctx.req.headers });
      ctx.status = receiverStatus;
      ctx.body = { ok: receiverStatus < 300 };
    });
    receiver = await listen(rx);

    let base = "";
    sim = createKycProviderSimulator({
      apiKey: API_KEY,
      secret: SECRET,
      publicBaseUrl: () => `${base}/simulators/kyc`,
      callbackUrl: () => `${receiver.url}/kyc/callback`,
    });
    provider = await listen(providerApp(sim, false));
    base = provider.url;
    // The same simulator behind a global body parser (as the host app may mount it) must still verify HMACs.
    parsedProvider = await listen(providerApp(sim, true));

    client = createKycProviderClient({
      baseUrl: `${provider.url}/simulators/kyc`,
      apiKey: API_KEY,
      secret: SECRET,
      timeoutMs: 2000,
    });
  });

  after(async () => {
    await close(provider.server);
    await close(parsedProvider.server);
    await close(receiver.server);
  });

  beforeEach(() => {
    deliveries.length = 0;
    receiverStatus = 200;
    sim.setMode("normal");
  });

  async function newSession(level: "BASIC" | "FULL" = "FULL", returnUrl = "https://partner.example/kyc/done?u=1") {
    return client.createSession({ userId: "usr_42", level, returnUrl });
  }

  function lastDecision() {
    const d = deliveries.at(-1);
    assert.ok(d, "a webhook was delivered");
    return client.verifyDecisionCallback(d.raw, d.headers);
  }

  describe("session creation", () => {
    it("creates a Veriff session and returns its id and hosted URL", async () => {
      const { sessionId, sessionUrl } = await newSession("FULL");
      assert.match(sessionId, /^[0-9a-f-]{36}$/);
      assert.ok(sessionUrl.startsWith(`${provider.url}/simulators/kyc/v/`));
      const res = await fetch(sessionUrl);
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /id="level">FULL</);
      assert.match(html, /value="approve">Approve</);
      assert.match(html, /value="reject">Reject</);
    });

    it("answers in Veriff's shape with the level carried in vendorData", async () => {
      const body = JSON.stringify({ verification: { callback: "https://partner.example/r", vendorData: "BASIC:usr_1" } });
      const res = await fetch(`${provider.url}/simulators/kyc/v1/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-auth-client": API_KEY, "x-hmac-signature": sign(body) },
        body,
      });
      assert.equal(res.status, 201);
      const json = (await res.json()) as { status: string; verification: Record<string, unknown> };
      assert.equal(json.status, "success");
      assert.equal(json.verification.vendorData, "BASIC:usr_1");
      assert.equal(json.verification.status, "created");
      assert.equal(json.verification.host, provider.url);
      assert.equal(typeof json.verification.sessionToken, "string");
      const page = await (await fetch(json.verification.url as string)).text();
      assert.match(page, /id="level">BASIC</);
    });

    it("works behind a global body parser (HMAC still over the raw body)", async () => {
      const viaParser = createKycProviderClient({
        baseUrl: `${parsedProvider.url}/simulators/kyc`,
        apiKey: API_KEY,
        secret: SECRET,
        timeoutMs: 2000,
      });
      const { sessionId } = await viaParser.createSession({ userId: "usr_7", level: "BASIC", returnUrl: "http://localhost/x" });
      assert.ok(sessionId);
    });

    it("throws KycProviderError when the provider is down, and recovers", async () => {
      sim.setMode("down");
      await assert.rejects(newSession(), (err: unknown) => {
        assert.ok(err instanceof KycProviderError);
        assert.equal(err.status, 500);
        assert.equal(err.code, "PROVIDER_ERROR");
        assert.ok(!err.message.includes(API_KEY) && !err.message.includes(SECRET));
        return true;
      });
      sim.setMode("normal");
      assert.ok((await newSession()).sessionId);
    });

    it("throws KycProviderError 401 on a bad API key", async () => {
      const bad = createKycProviderClient({
        baseUrl: `${provider.url}/simulators/kyc`,
        apiKey: "00000000-0000-4000-8000-000000000000",
        secret: SECRET,
        timeoutMs: 2000,
      });
      await assert.rejects(newSessionWith(bad), (err: unknown) => {
        assert.ok(err instanceof KycProviderError);
        assert.equal(err.status, 401);
        assert.equal(err.providerCode, "1803");
        return true;
      });
    });

    it("throws KycProviderError 401 on a wrong shared secret (request signature mismatch)", async () => {
      const bad = createKycProviderClient({
        baseUrl: `${provider.url}/simulators/kyc`,
        apiKey: API_KEY,
        secret: "not-the-secret",
        timeoutMs: 2000,
      });
      await assert.rejects(newSessionWith(bad), (err: unknown) => {
        assert.ok(err instanceof KycProviderError);
        assert.equal(err.status, 401);
        assert.equal(err.providerCode, "1819");
        return true;
      });
    });

    it("simulator answers 401 without X-AUTH-CLIENT and 400 on a bad body, like Veriff", async () => {
      const url = `${provider.url}/simulators/kyc/v1/sessions`;
      const noKey = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      assert.equal(noKey.status, 401);
      assert.deepEqual(((await noKey.json()) as { code: string }).code, "1801");
      const notJson = await fetch(url, { method: "POST", headers: { "x-auth-client": API_KEY }, body: "{nope" });
      assert.equal(notJson.status, 400);
      const noVerification = await fetch(url, { method: "POST", headers: { "x-auth-client": API_KEY }, body: "{}" });
      assert.equal(noVerification.status, 400);
      assert.equal(((await noVerification.json()) as { code: string }).code, "1102");
      const badVendor = JSON.stringify({ verification: { vendorData: 12 } });
      const vendor = await fetch(url, { method: "POST", headers: { "x-auth-client": API_KEY }, body: badVendor });
      assert.equal(vendor.status, 400);
    });

    it("times out with KycProviderError 504", async () => {
      const hang = await listen(createServer(() => undefined));
      try {
        const slow = createKycProviderClient({ baseUrl: hang.url, apiKey: API_KEY, secret: SECRET, timeoutMs: 100 });
        await assert.rejects(newSessionWith(slow), (err: unknown) => {
          assert.ok(err instanceof KycProviderError);
          assert.equal(err.status, 504);
          assert.equal(err.code, "TIMEOUT");
          return true;
        });
      } finally {
        await close(hang.server);
      }
    });

    it("rejects an unexpected success body and an unreachable provider", async () => {
      const weird = createKycProviderClient({
        baseUrl: "https://veriff.invalid",
        apiKey: API_KEY,
        secret: SECRET,
        timeoutMs: 1000,
        fetch: async () => Response.json({ status: "success", verification: { id: "x" } }, { status: 201 }),
      });
      await assert.rejects(newSessionWith(weird), (err: unknown) => err instanceof KycProviderError && err.code === "BAD_RESPONSE");
      const html = createKycProviderClient({
        baseUrl: "https://veriff.invalid",
        apiKey: API_KEY,
        secret: SECRET,
        timeoutMs: 1000,
        fetch: async () => new Response("<html>", { status: 200 }),
      });
      await assert.rejects(newSessionWith(html), (err: unknown) => err instanceof KycProviderError && err.status === 502);
      const refused = createKycProviderClient({ baseUrl: "http://127.0.0.1:1", apiKey: API_KEY, secret: SECRET, timeoutMs: 1000 });
      await assert.rejects(newSessionWith(refused), (err: unknown) => err instanceof KycProviderError && err.code === "NETWORK_ERROR");
    });

    it("sends Veriff's request: X-AUTH-CLIENT, HMAC of the exact body, callback and vendorData", async () => {
      let seen: { url: string; headers: Headers; body: string } | undefined;
      const spy = createKycProviderClient({
        baseUrl: "https://stationapi.veriff.com/",
        apiKey: API_KEY,
        secret: SECRET,
        timeoutMs: 1000,
        fetch: async (input, init) => {
          seen = { url: String(input), headers: new Headers(init?.headers), body: String(init?.body) };
          return Response.json(
            { status: "success", verification: { id: "sess-1", url: "https://alchemy.veriff.com/v/tok", status: "created" } },
            { status: 201 },
          );
        },
      });
      const out = await spy.createSession({ userId: "usr_9", level: "BASIC", returnUrl: "https://p.example/back", vendorData: "ref-9" });
      assert.deepEqual(out, { sessionId: "sess-1", sessionUrl: "https://alchemy.veriff.com/v/tok" });
      assert.ok(seen);
      assert.equal(seen.url, "https://stationapi.veriff.com/v1/sessions");
      assert.equal(seen.headers.get("x-auth-client"), API_KEY);
      assert.equal(seen.headers.get("x-hmac-signature"), sign(seen.body));
      assert.deepEqual(JSON.parse(seen.body), { verification: { callback: "https://p.example/back", vendorData: "BASIC:ref-9" } });
    });
  });

  describe("decision webhooks", () => {
    it("decide(APPROVED) sends a signed decision the client verifies", async () => {
      const { sessionId } = await newSession("FULL");
      const { returnUrl } = await sim.decide(sessionId, "APPROVED");
      assert.equal(returnUrl, "https://partner.example/kyc/done?u=1");
      assert.equal(deliveries.length, 1);
      const d = deliveries[0]!;
      assert.equal(d.headers["x-auth-client"], API_KEY);
      assert.equal(d.headers["x-hmac-signature"], sign(d.raw.toString()));
      const body = JSON.parse(d.raw.toString()) as { status: string; verification: Record<string, unknown> };
      assert.equal(body.status, "success");
      assert.equal(body.verification.code, 9001);
      assert.equal(body.verification.status, "approved");
      const decision = client.verifyDecisionCallback(d.raw, d.headers);
      assert.equal(decision.kind, "decision");
      assert.equal(decision.sessionId, sessionId);
      assert.equal(decision.result, "APPROVED");
      assert.equal(decision.level, "FULL");
      assert.equal(decision.vendorData, "usr_42");
      assert.ok(decision.decidedAt instanceof Date && !Number.isNaN(decision.decidedAt.getTime()));
      assert.equal(decision.isPep, false);
      assert.equal(decision.isSanctioned, false);
      assert.equal(decision.reason, undefined);
    });

    it("decide(REJECTED) maps to REJECTED with a reason", async () => {
      const { sessionId } = await newSession("BASIC");
      await sim.decide(sessionId, "REJECTED");
      const decision = lastDecision();
      assert.equal(decision.result, "REJECTED");
      assert.equal(decision.level, "BASIC");
      assert.equal(typeof decision.reason, "string");
      assert.equal(JSON.parse(deliveries[0]!.raw.toString()).verification.code, 9102);
    });

    it("carries the PEP flag", async () => {
      const { sessionId } = await newSession("FULL");
      await sim.decide(sessionId, "APPROVED", { isPep: true });
      const body = JSON.parse(deliveries[0]!.raw.toString());
      assert.equal(body.verification.person.pepSanctionMatch, "possible match");
      const decision = lastDecision();
      assert.equal(decision.result, "APPROVED");
      assert.equal(decision.isPep, true);
      assert.equal(decision.isSanctioned, false);
    });

    it("maps the watchlist-screening webhook to isPep / isSanctioned", async () => {
      const { sessionId } = await newSession("FULL");
      await sim.sendWatchlistScreening(sessionId, { isSanctioned: true });
      let decision = lastDecision();
      assert.equal(decision.kind, "screening");
      assert.equal(decision.result, "PENDING");
      assert.equal(decision.sessionId, sessionId);
      assert.equal(decision.level, "FULL");
      assert.deepEqual([decision.isPep, decision.isSanctioned], [false, true]);
      await sim.sendWatchlistScreening(sessionId, { isPep: true });
      decision = lastDecision();
      assert.deepEqual([decision.isPep, decision.isSanctioned], [true, false]);
      await sim.sendWatchlistScreening(sessionId, {});
      decision = lastDecision();
      assert.deepEqual([decision.isPep, decision.isSanctioned], [false, false]);
    });

    it("refuses to decide twice or an unknown session, and keeps a session open when delivery fails", async () => {
      await assert.rejects(sim.decide("nope", "APPROVED"), (e: unknown) => e instanceof KycSimulatorError && e.status === 404);
      const { sessionId } = await newSession();
      receiverStatus = 500;
      await assert.rejects(sim.decide(sessionId, "APPROVED"), (e: unknown) => e instanceof KycSimulatorError && e.status === 502);
      receiverStatus = 200;
      await sim.decide(sessionId, "APPROVED");
      await assert.rejects(sim.decide(sessionId, "REJECTED"), (e: unknown) => e instanceof KycSimulatorError && e.status === 409);
    });
  });

  describe("callback verification", () => {
    let good: Delivery;

    beforeEach(async () => {
      const { sessionId } = await newSession();
      await sim.decide(sessionId, "APPROVED");
      good = deliveries.at(-1)!;
    });

    const rejectsSignature = (raw: Buffer | string, headers: Record<string, string | string[] | undefined>) =>
      assert.throws(() => client.verifyDecisionCallback(raw, headers), KycCallbackSignatureError);

    it("accepts the genuine callback as Buffer or string", () => {
      assert.equal(client.verifyDecisionCallback(good.raw, good.headers).result, "APPROVED");
      assert.equal(client.verifyDecisionCallback(good.raw.toString("utf8"), good.headers).result, "APPROVED");
      const upper = { ...good.headers, "x-hmac-signature": String(good.headers["x-hmac-signature"]).toUpperCase() };
      assert.equal(client.verifyDecisionCallback(good.raw, upper).result, "APPROVED");
    });

    it("rejects a forged signature", () => {
      const body = good.raw.toString();
      rejectsSignature(body, { "x-auth-client": API_KEY, "x-hmac-signature": sign(body, "attacker-secret") });
    });

    it("rejects an unsigned callback", () => {
      rejectsSignature(good.raw, { "x-auth-client": API_KEY, "content-type": "application/json" });
      rejectsSignature(good.raw, { "x-hmac-signature": String(good.headers["x-hmac-signature"]) });
      rejectsSignature(good.raw, { "x-auth-client": API_KEY, "x-hmac-signature": "" });
      rejectsSignature(good.raw, { "x-auth-client": API_KEY, "x-hmac-signature": "zz" });
    });

    it("rejects a wrong X-AUTH-CLIENT even with a valid signature", () => {
      rejectsSignature(good.raw, { ...good.headers, "x-auth-client": "someone-else" });
    });

    it("rejects a body tampered with after signing", () => {
      const tampered = good.raw.toString().replace('"approved"', '"declined"');
      assert.notEqual(tampered, good.raw.toString());
      rejectsSignature(tampered, good.headers);
      const flipped = Buffer.from(good.raw);
      const at = flipped.length - 2;
      flipped.writeUInt8(flipped.readUInt8(at) ^ 1, at);
      rejectsSignature(flipped, good.headers);
      // Re-serialised JSON is not the raw body either.
      rejectsSignature(JSON.stringify(JSON.parse(good.raw.toString()), null, 2), good.headers);
    });

    it("rejects repeated signature headers", () => {
      const sig = String(good.headers["x-hmac-signature"]);
      rejectsSignature(good.raw, { "x-auth-client": API_KEY, "x-hmac-signature": [sig, sig] });
    });

    it("throws KycCallbackPayloadError on a correctly signed but malformed body", () => {
      const headersFor = (body: string) => ({ "X-AUTH-CLIENT": API_KEY, "X-HMAC-SIGNATURE": sign(body) });
      for (const body of ["{not json", "[]", "{}", '{"verification":{"status":"approved"}}', '{"verification":{"id":"a"}}']) {
        assert.throws(() => client.verifyDecisionCallback(body, headersFor(body)), KycCallbackPayloadError, body);
      }
      const badTime = JSON.stringify({ verification: { id: "a", status: "approved", decisionTime: "yesterday" } });
      assert.throws(() => client.verifyDecisionCallback(badTime, headersFor(badTime)), KycCallbackPayloadError);
    });

    it("maps Veriff statuses and codes", () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ status: "approved", code: 9001 }, "APPROVED"],
        [{ status: "declined", code: 9102 }, "REJECTED"],
        [{ status: "resubmission_requested", code: 9103 }, "PENDING"],
        [{ status: "expired", code: 9104 }, "REJECTED"],
        [{ status: "abandoned", code: 9104 }, "REJECTED"],
        [{ status: "review", code: 9121 }, "PENDING"],
        [{ code: 9001 }, "APPROVED"],
        [{ status: "something_new" }, "PENDING"],
      ];
      for (const [fields, expected] of cases) {
        const body = JSON.stringify({
          status: "success",
          verification: { id: "s-1", vendorData: "FULL:usr_1", decisionTime: "2026-11-21T17:05:09.123Z", ...fields },
        });
        const decision = client.verifyDecisionCallback(body, { "x-auth-client": API_KEY, "x-hmac-signature": sign(body) });
        assert.equal(decision.result, expected, JSON.stringify(fields));
        assert.equal(decision.decidedAt.toISOString(), "2026-11-21T17:05:09.123Z");
      }
      const plain = JSON.stringify({ verification: { id: "s-2", status: "approved", vendorData: "no-level" } });
      const d = client.verifyDecisionCallback(plain, { "x-auth-client": API_KEY, "x-hmac-signature": sign(plain) });
      assert.equal(d.level, undefined);
      assert.equal(d.vendorData, "no-level");
    });
  });

  describe("hosted page (browser flow)", () => {
    async function submit(sessionUrl: string, fields: Record<string, string>, base = provider.url) {
      const page = await (await fetch(sessionUrl)).text();
      const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1];
      assert.ok(action, "the page has a form");
      const target = new URL(action.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))), sessionUrl);
      const url = new URL(target.pathname, base);
      return fetch(url, { method: "POST", body: new URLSearchParams(fields), redirect: "manual" });
    }

    it("Approve posts back, sends the webhook and redirects 303 to returnUrl", async () => {
      const { sessionId, sessionUrl } = await newSession("BASIC", "https://partner.example/return");
      const res = await submit(sessionUrl, { decision: "approve" });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "https://partner.example/return");
      const decision = lastDecision();
      assert.equal(decision.sessionId, sessionId);
      assert.equal(decision.result, "APPROVED");
      assert.equal(decision.level, "BASIC");
      assert.equal(decision.isPep, false);
      const after = await (await fetch(sessionUrl)).text();
      assert.match(after, /approved/);
    });

    it("Reject posts back and redirects 303 to returnUrl", async () => {
      const { sessionUrl } = await newSession("FULL", "https://partner.example/return?x=2");
      const res = await submit(sessionUrl, { decision: "reject" });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), "https://partner.example/return?x=2");
      assert.equal(lastDecision().result, "REJECTED");
    });

    it("the PEP box carries isPep; works behind a body parser too", async () => {
      const { sessionUrl } = await newSession("FULL");
      const res = await submit(sessionUrl, { decision: "approve", pep: "1" }, parsedProvider.url);
      assert.equal(res.status, 303);
      const decision = lastDecision();
      assert.equal(decision.result, "APPROVED");
      assert.equal(decision.isPep, true);
    });

    it("a second decision is refused and sends nothing", async () => {
      const { sessionUrl } = await newSession();
      assert.equal((await submit(sessionUrl, { decision: "approve" })).status, 303);
      const again = await fetch(new URL(`${new URL(sessionUrl).pathname}/decision`, provider.url), {
        method: "POST",
        body: new URLSearchParams({ decision: "reject" }),
        redirect: "manual",
      });
      assert.equal(again.status, 409);
      assert.equal(deliveries.length, 1);
    });

    it("unknown sessions and bad choices are refused", async () => {
      assert.equal((await fetch(`${provider.url}/simulators/kyc/v/unknown`)).status, 404);
      const { sessionUrl } = await newSession();
      const bad = await fetch(`${sessionUrl}/decision`, { method: "POST", body: new URLSearchParams({ decision: "maybe" }) });
      assert.equal(bad.status, 400);
      assert.equal(deliveries.length, 0);
    });
  });
});

function newSessionWith(c: KycProviderClient) {
  return c.createSession({ userId: "usr_1", level: "FULL", returnUrl: "https://partner.example/done" });
}
