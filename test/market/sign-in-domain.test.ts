// Decisions 17: the SIWE message names PUBLIC_URL as its domain and URI, never the request's Host or
// X-Forwarded-Host, and a session is opened only for a message naming that domain, so a phishing page
// that relays the challenge shows the victim this service's name and cannot open a session for itself.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import { after, before, test } from "node:test";
import { createSiweMessage, generateSiweNonce } from "viem/siwe";
import { pruneMarketSignIns, SIWE_STATEMENT } from "../../src/market/auth.ts";
import { assertError } from "../support/assertions.ts";
import type { TestService } from "../support/service.ts";
import { startOfflineOrderService } from "../support/trade-stack.ts";
import { market, newWallet, signIn } from "./support.ts";

const PUBLIC_URL = "https://offramp.example";

let service: TestService;
before(async () => {
  service = await startOfflineOrderService({ PUBLIC_URL, TRUST_PROXY: "1" });
});
after(() => service.close());

/** POST /market/v1/auth/challenge with the headers a relaying site would send. */
function challengeWith(headers: Record<string, string>, address: string): Promise<{ status: number; body: { message: string } }> {
  const url = new URL(service.baseUrl);
  const body = JSON.stringify({ address });
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, method: "POST", path: "/market/v1/auth/challenge", headers: { ...headers, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as { message: string } }));
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

test("Host: evil.example and X-Forwarded-Host still get a message naming PUBLIC_URL, which opens a session", async () => {
  const account = newWallet();
  const challenge = await challengeWith({ Host: "evil.example", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http" }, account.address);
  assert.equal(challenge.status, 201);
  assert.ok(challenge.body.message.startsWith(`offramp.example wants you to sign in with your Ethereum account:\n${account.address}\n`), challenge.body.message);
  assert.match(challenge.body.message, /\nURI: https:\/\/offramp\.example\n/);
  assert.ok(!challenge.body.message.includes("evil.example"));

  const signature = await account.signMessage({ message: challenge.body.message });
  const session = await market({ service }, "POST", "/auth/session", { body: { message: challenge.body.message, signature } });
  assert.equal(session.status, 201, JSON.stringify(session.body));
});

test("a signed message naming another domain is refused 401 INVALID_SIGNATURE, even one recorded as issued", async () => {
  // What the service issued when it took the domain from Host: the nonce and message are on record.
  const account = newWallet();
  const now = new Date();
  const nonce = generateSiweNonce();
  const message = createSiweMessage({
    domain: "evil.example",
    address: account.address,
    statement: SIWE_STATEMENT,
    uri: "https://evil.example",
    version: "1",
    chainId: 31337,
    nonce,
    issuedAt: now,
    expirationTime: new Date(now.getTime() + 300_000),
  });
  await service.pool.query("INSERT INTO market_nonces (nonce, wallet, message_hash, expires_at) VALUES ($1, $2, $3, $4)", [
    nonce,
    account.address.toLowerCase(),
    createHash("sha256").update(message).digest("hex"),
    new Date(now.getTime() + 300_000),
  ]);
  const signature = await account.signMessage({ message });
  assertError(await market({ service }, "POST", "/auth/session", { body: { message, signature } }), 401, "INVALID_SIGNATURE");
  const { rows } = await service.pool.query("SELECT 1 FROM market_sessions WHERE wallet = $1", [account.address.toLowerCase()]);
  assert.equal(rows.length, 0, "no session was opened");
});

test("challenges an hour past their expiry and sessions a day past their end are pruned; live ones stay and work", async () => {
  const old = await signIn({ service });
  const signedOut = await signIn({ service });
  const live = await signIn({ service });
  assert.equal((await market({ service }, "DELETE", "/auth/session", { token: signedOut.token })).status, 204);
  const stale = await challengeWith({}, newWallet().address);
  const fresh = await challengeWith({}, newWallet().address);
  const hashOf = (text: string) => createHash("sha256").update(text).digest("hex");
  await service.pool.query("UPDATE market_nonces SET expires_at = now() - interval '2 hours' WHERE message_hash = $1", [hashOf(stale.body.message)]);
  await service.pool.query("UPDATE market_sessions SET expires_at = now() - interval '2 days' WHERE token_hash = $1", [hashOf(old.token)]);
  await service.pool.query("UPDATE market_sessions SET revoked_at = now() - interval '2 days' WHERE token_hash = $1", [hashOf(signedOut.token)]);

  assert.equal(await pruneMarketSignIns(service.pool), 3);
  const nonces = await service.pool.query<{ message_hash: string }>("SELECT message_hash FROM market_nonces WHERE message_hash = ANY($1)", [[hashOf(stale.body.message), hashOf(fresh.body.message)]]);
  assert.deepEqual(nonces.rows.map((row) => row.message_hash), [hashOf(fresh.body.message)]);
  assert.equal((await market({ service }, "GET", "/me", { token: live.token })).status, 200);
  assertError(await market({ service }, "GET", "/me", { token: old.token }), 401, "UNAUTHORIZED");
});

test("dashboard invitation links are on PUBLIC_URL too, whatever Host the operator's request carried", async () => {
  const partner = await service.createPartner();
  const invited = await service.admin<{ inviteUrl: string }>("POST", `/partners/${partner.id}/members`, { email: `invitee-${Date.now()}@example.com`, role: "VIEWER" });
  assert.equal(invited.status, 201);
  assert.ok(invited.body.inviteUrl.startsWith(`${PUBLIC_URL}/dashboard#/invitation/`), invited.body.inviteUrl);
});
