// Decisions section 19: logs never hold API keys, webhook secrets, private keys, session tokens,
// passwords, or credentials inside URLs. Each is logged through the service's real logger, the way
// code would log it by mistake, and the written lines are searched for it.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger } from "../../src/logger.ts";

function capture(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString("utf8"));
      done();
    },
  });
  return { logger: createLogger("trace", stream), text: () => chunks.join("") };
}

const API_KEY = `ofrk_${"ab12".repeat(16)}`;
const WEBHOOK_SECRET = `whsec_${"cd34".repeat(16)}`;
const PRIVATE_KEY = `0x${"5e".repeat(32)}`;
const MARKET_SESSION = `mks_${"9f".repeat(32)}`;
const DASHBOARD_SESSION = "d1a2b3c4e5f6a7b8c9d0e1f2a3b4c5d6";
const PASSWORD = "correct horse battery staple";
const RPC_KEY = "Xq3vB7nK2pL9sT4wY8zA1cD6";
const RPC_URL = `https://base-mainnet.g.example.com/v2/${RPC_KEY}`;
const BASIC_URL = "https://rpcuser:rpc-pass-w0rd@node.example.com:8545/";
const QUERY_URL = "https://rpc.example.com/?apikey=qk-77aa88bb99cc";
const WEBHOOK_SECRET_RAW = "whsecraw-7f3a9c";
const ADMIN_TOKEN = "adm1n-t0ken-ABCDEFGHIJKLMNOPQRSTUVWX";
const SHORT_RPC_KEY = "abc123def456";

const cases: [string, string, (logger: ReturnType<typeof createLogger>) => void][] = [
  ["an API key in a field", API_KEY, (log) => log.info({ apiKey: API_KEY }, "partner created")],
  ["an API key in a request's headers", API_KEY, (log) => log.info({ req: { headers: { "x-api-key": API_KEY } } }, "request")],
  ["an API key in the message text", API_KEY, (log) => log.warn(`key ${API_KEY} refused`)],
  ["a webhook secret, nested", WEBHOOK_SECRET, (log) => log.info({ partner: { id: "ptn_1", webhookSecret: WEBHOOK_SECRET } }, "rotated")],
  ["a webhook secret inside a string", WEBHOOK_SECRET, (log) => log.info({ detail: `signing with ${WEBHOOK_SECRET}` })],
  ["a private key in a config object", PRIVATE_KEY, (log) => log.info({ config: { servicePrivateKey: PRIVATE_KEY, chainId: 31337 } }, "config")],
  ["a private key under privateKey", PRIVATE_KEY, (log) => log.debug({ account: { privateKey: PRIVATE_KEY } })],
  ["a market session token", MARKET_SESSION, (log) => log.info({ token: MARKET_SESSION }, "signed in")],
  ["a market session token in an Authorization header", MARKET_SESSION, (log) => log.info({ headers: { Authorization: `Bearer ${MARKET_SESSION}` } })],
  ["a dashboard session cookie", DASHBOARD_SESSION, (log) => log.info({ headers: { cookie: `session=${DASHBOARD_SESSION}` } })],
  ["a dashboard session token field", DASHBOARD_SESSION, (log) => log.info({ sessionToken: DASHBOARD_SESSION })],
  ["a password", PASSWORD, (log) => log.info({ body: { email: "owner@example.com", password: PASSWORD } }, "sign-in")],
  ["an RPC URL's key in its path", RPC_KEY, (log) => log.info({ rpcUrl: RPC_URL }, "chain")],
  ["an RPC URL's key in the message text", RPC_KEY, (log) => log.error(`cannot reach ${RPC_URL}`)],
  ["an RPC URL's key in an error's message", RPC_KEY, (log) => log.error({ err: new Error(`HTTP request failed. URL: ${RPC_URL}`) }, "send failed")],
  ["credentials in a URL's user part", "rpc-pass-w0rd", (log) => log.info({ url: BASIC_URL })],
  ["a key in a URL's query", "qk-77aa88bb99cc", (log) => log.info({ url: QUERY_URL })],
  ["a child logger's bindings", API_KEY, (log) => log.child({ apiKey: API_KEY }).info("child")],
  // Field names in snake case or kebab case, and a bare `key`.
  ["a webhook secret under webhook_secret", WEBHOOK_SECRET_RAW, (log) => log.info({ webhook_secret: WEBHOOK_SECRET_RAW })],
  ["an API key under api_key", ADMIN_TOKEN, (log) => log.info({ api_key: ADMIN_TOKEN })],
  ["a private key under private_key", PRIVATE_KEY, (log) => log.info({ signer: { private_key: PRIVATE_KEY } })],
  ["a private key under PRIVATE-KEY", PRIVATE_KEY, (log) => log.info({ "PRIVATE-KEY": PRIVATE_KEY })],
  ["a private key under key", PRIVATE_KEY, (log) => log.info({ key: PRIVATE_KEY })],
  ["a snake-case field in a child logger's bindings", ADMIN_TOKEN, (log) => log.child({ api_key: ADMIN_TOKEN }).info("child")],
  // Secrets written into text.
  ["a private key in the message text", PRIVATE_KEY, (log) => log.error(`signing with ${PRIVATE_KEY} failed`)],
  ["a private key inside a string field", PRIVATE_KEY, (log) => log.error({ detail: `PRIVATE_KEY=${PRIVATE_KEY}` }, "bad config")],
  ["a bearer token in the message text", ADMIN_TOKEN, (log) => log.warn(`Authorization: Bearer ${ADMIN_TOKEN}`)],
  ["a session cookie in the message text", DASHBOARD_SESSION, (log) => log.info(`cookie session=${DASHBOARD_SESSION}`)],
  ["the dashboard cookie in a string field", DASHBOARD_SESSION, (log) => log.info({ detail: `Cookie: offramp_dashboard=${DASHBOARD_SESSION}; theme=dark` })],
  ["an admin token under x-admin-token", ADMIN_TOKEN, (log) => log.info({ headers: { "x-admin-token": ADMIN_TOKEN } })],
  ["an RPC URL's short key in its path", SHORT_RPC_KEY, (log) => log.info({ rpcUrl: `https://eth-mainnet.example.com/v3/${SHORT_RPC_KEY}` })],
];

for (const [what, secret, write] of cases) {
  test(`the logger never writes ${what}`, () => {
    const { logger, text } = capture();
    write(logger);
    const written = text();
    assert.ok(written.length > 0, "a line was written");
    assert.ok(!written.includes(secret), `found the secret in: ${written}`);
    assert.match(written, /\[redacted\]/);
  });
}

test("what is not secret stays readable: ids, transaction hashes, paths, public URLs", () => {
  const { logger, text } = capture();
  const txHash = `0x${"ab".repeat(32)}`;
  const escrowOrderId = `0x${"cd".repeat(32)}`;
  logger.info(
    { orderId: "ord_01JD2Z", txHash, escrow_order_id: escrowOrderId, path: "/api/v1/orders/ord_01JD2Z", webhookUrl: "https://partner.example/hooks/offramp-events", monkey: "banana" },
    "order event",
  );
  const line = JSON.parse(text()) as Record<string, unknown>;
  assert.equal(line.orderId, "ord_01JD2Z");
  assert.equal(line.txHash, txHash);
  assert.equal(line.escrow_order_id, escrowOrderId);
  assert.equal(line.monkey, "banana");
  assert.equal(line.path, "/api/v1/orders/ord_01JD2Z");
  assert.equal(line.webhookUrl, "https://partner.example/hooks/offramp-events");
  assert.equal(line.msg, "order event");
});
