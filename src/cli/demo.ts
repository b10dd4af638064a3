// `npm run demo`: one whole trade against a running sandbox (`npm start`), through the public APIs
// only, as a partner would drive it: a partner (admin API) whose webhooks come to a receiver this
// command runs on 127.0.0.1, then, through the partner SDK (sdk/), a user, a quote, an order and the
// seller's deposit (sandbox helper); then
// the buyer through the market API as in production (its own wallet signs in, KYC, the order book, a
// lock permit and its own lock transaction, the SPEI transfer (simulated) and its report), until the
// order is COMPLETED.
// Each step is printed as it happens with the elapsed time, and each webhook as it arrives with its
// signature checked against the partner's webhook secret by the SDK's verifyWebhook.
//
//   npm run demo -- [--url http://127.0.0.1:3000] [--admin-token TOKEN] [--amount 50]
//
// The base URL comes from --url, else OFFRAMP_URL, else http://127.0.0.1:3000. The admin token from
// --admin-token, else ADMIN_TOKEN, else the `adminToken` that `npm start` keeps in $DATA_DIR/sandbox.json.
// Exit status 0 once the order is COMPLETED and every webhook received was correctly signed.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { parseArgs } from "node:util";
import { createWalletClient, defineChain, http as viemHttp, publicActions, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createOfframpClient, OfframpApiError, verifyWebhook, type WebhookEvent } from "../../sdk/src/index.ts";
import { escrowAbi } from "../chain/escrow-abi.ts";
import { withCheckDigit } from "../domain/clabe.ts";

type Json = Record<string, unknown>;

const USAGE = "usage: npm run demo -- [--url http://127.0.0.1:3000] [--admin-token TOKEN] [--amount USDC]";
/** The demo seller's CLABE (BBVA México). */
const SELLER_CLABE = withCheckDigit("01218000118359719");
const STEP_TIMEOUT_MS = 60_000;

class DemoError extends Error {}

const started = Date.now();
function log(text: string): void {
  const seconds = ((Date.now() - started) / 1000).toFixed(2).padStart(6);
  process.stdout.write(`[${seconds}s] ${text}\n`);
}

async function adminTokenFrom(option: string | undefined): Promise<string> {
  if (option) return option;
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.resolve(process.env.DATA_DIR ?? ".data", "sandbox.json");
  try {
    const state = JSON.parse(await readFile(file, "utf8")) as { adminToken?: unknown };
    if (typeof state.adminToken === "string" && state.adminToken) return state.adminToken;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new DemoError(`cannot read ${file}: ${(error as Error).message}`);
  }
  throw new DemoError(`no admin token: pass --admin-token, set ADMIN_TOKEN, or run \`npm start\` (it writes ${file})`);
}

function client(baseUrl: string) {
  return async function call<T = Json>(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${baseUrl}${url}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new DemoError(`cannot reach ${baseUrl} (${(error as Error).message}): is \`npm start\` running?`);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { error: "NOT_JSON", message: text.slice(0, 200) };
    }
    if (!response.ok) {
      const error = parsed as { error?: string; message?: string };
      throw new DemoError(`${method} ${url} answered ${response.status} ${error.error ?? ""}: ${error.message ?? text.slice(0, 200)}`);
    }
    return parsed as T;
  };
}

interface ReceivedWebhook {
  id: string;
  event: string;
  sequence: number;
  status: string;
  signatureOk: boolean;
}

/** The partner's endpoint: checks each delivery with the SDK's verifyWebhook (signature and timestamp). */
async function startReceiver(getSecret: () => string | undefined, onWebhook: (webhook: ReceivedWebhook) => void) {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const secret = getSecret();
      let event: WebhookEvent | undefined;
      try {
        event = verifyWebhook(Buffer.concat(chunks), req.headers, secret ? [secret] : []);
      } catch {
        // reported below as a delivery whose signature failed
      }
      res.writeHead(event ? 200 : 401).end();
      onWebhook({
        id: String(req.headers["x-webhook-id"] ?? "?"),
        event: event?.event ?? "(not verified)",
        sequence: event?.data.sequence ?? 0,
        status: event?.data.status ?? "?",
        signatureOk: event !== undefined,
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new DemoError(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { url: { type: "string" }, "admin-token": { type: "string" }, amount: { type: "string" }, help: { type: "boolean", short: "h" } },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const baseUrl = (values.url ?? process.env.OFFRAMP_URL ?? "http://127.0.0.1:3000").replace(/\/+$/, "");
  const amountUsdc = Number(values.amount ?? "50");
  if (!Number.isFinite(amountUsdc) || amountUsdc <= 0) throw new DemoError(`--amount must be a positive number of USDC, got ${values.amount}`);
  const adminToken = await adminTokenFrom(values["admin-token"]);
  const call = client(baseUrl);
  const admin = { Authorization: `Bearer ${adminToken}` };

  process.stdout.write(`Offramp demo against ${baseUrl}\n`);
  let webhookSecret: string | undefined;
  const webhooks: ReceivedWebhook[] = [];
  const receiver = await startReceiver(
    () => webhookSecret,
    (webhook) => {
      webhooks.push(webhook);
      log(`webhook #${webhook.sequence} ${webhook.event.padEnd(24)} status ${webhook.status.padEnd(15)} signature ${webhook.signatureOk ? "ok" : "INVALID"} (${webhook.id})`);
    },
  );
  try {
    log(`webhook receiver listening on ${receiver.url}`);
    const partner = await call<{ id: string; apiKey: string; webhookSecret: string; tier: string }>("POST", "/admin/v1/partners", admin, {
      name: `Demo partner ${new Date().toISOString()}`,
      tier: "GROWTH",
      kycModel: "PARTNER_MANAGED",
      webhookUrl: receiver.url,
    });
    webhookSecret = partner.webhookSecret;
    log(`partner ${partner.id} created (${partner.tier}), its webhooks sent to the receiver`);
    // The partner's side from here on goes through the SDK (Idempotency-Key, retries, typed errors).
    const offramp = createOfframpClient({ baseUrl, apiKey: partner.apiKey });

    const ref = `demo-user-${randomBytes(4).toString("hex")}`;
    await offramp.createUser({ partnerUserRef: ref });
    log(`user ${ref} registered`);

    const quote = await offramp.createQuote({ type: "SELL", amountUsdc, partnerUserRef: ref });
    log(`quote ${quote.id}: ${amountUsdc} USDC for ${quote.netAmountMxn} MXN at ${quote.exchangeRate} MXN/USD`);

    const order = await offramp.createOrder({ quoteId: quote.id!, partnerUserRef: ref, sellerClabe: SELLER_CLABE });
    log(`order ${order.id} PENDING_DEPOSIT: the buyer will pay ${order.totalMxn} MXN to CLABE ${SELLER_CLABE}`);

    const detail = () => offramp.getOrder(order.id);
    // The order's statuses along the demo's path: a status is reached once the order is at it or past it
    // (PENDING_RELEASE can last milliseconds before the release lands, too short for a poll to see).
    const path = ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "PENDING_RELEASE", "COMPLETED"];
    const reach = async (status: string) => until(`order ${order.id} to be ${status}`, async () => {
      const current = await detail();
      if (!path.includes(current.status)) throw new DemoError(`the order ended ${current.status}`);
      return path.indexOf(current.status) >= path.indexOf(status) ? current : undefined;
    });
    const deposit = await offramp.sandbox.deposit(order.id);
    log(`seller wallet ${deposit.sellerWallet} deposited ${amountUsdc} USDC into the escrow (tx ${deposit.txHash})`);
    await reach("ACTIVE");
    log("order ACTIVE: the indexer saw the deposit");

    // The buyer comes in through the market API (decisions 17), as in production: its own wallet (a
    // fresh key, funded with test ETH by the sandbox faucet), sign-in, KYC, the order book, a lock
    // permit and its own lock transaction, the payment instructions, the SPEI transfer and the report.
    const buyerAccount = privateKeyToAccount(generatePrivateKey());
    const chain = await offramp.sandbox.chain();
    await offramp.sandbox.faucet({ address: buyerAccount.address, eth: 1, usdc: 0 });
    log(`buyer wallet ${buyerAccount.address} funded with 1 test ETH for gas (sandbox faucet)`);
    const challenge = await call<{ message: string }>("POST", "/market/v1/auth/challenge", {}, { address: buyerAccount.address });
    const session = await call<{ token: string }>("POST", "/market/v1/auth/session", {}, { message: challenge.message, signature: await buyerAccount.signMessage({ message: challenge.message }) });
    const buyer = { Authorization: `Bearer ${session.token}` };
    log("buyer signed in to the market with its wallet (Sign-In with Ethereum)");
    const kyc = await call<{ sessionId: string }>("POST", "/market/v1/me/kyc", buyer, { level: "BASIC", returnUrl: `${baseUrl}/market` });
    // The name the provider verified: the SPEI must come from an account in this name (decisions 8).
    const buyerName = "Lucía Fernández Ortega";
    await call("POST", `/market/v1/sandbox/kyc/${kyc.sessionId}/decision`, buyer, { result: "APPROVED", name: buyerName });
    log(`buyer KYC approved by the (simulated) provider, session ${kyc.sessionId}: verified as ${buyerName}`);
    const listed = await until("the order in the market's order book", async () => {
      for (let offset = 0; ; offset += 100) {
        const book = await call<{ orders: (Json & { escrowOrderId: string; pricePerUnit: number })[]; hasMore: boolean }>("GET", `/market/v1/orders?limit=100&offset=${offset}`, buyer);
        const found = book.orders.find((item) => item.escrowOrderId === order.escrowOrderId);
        if (found || !book.hasMore) return found;
      }
    });
    log(`order found in the market's order book at ${listed.pricePerUnit} MXN per USDC`);
    const permit = await call<{ permit: { orderId: Hex; buyer: Hex; deadline: number }; signature: Hex; escrowAddress: Hex }>(
      "POST",
      `/market/v1/orders/${order.escrowOrderId}/lock-permit`,
      buyer,
    );
    log(`lock permit signed by the service for the buyer's wallet, valid until ${new Date(permit.permit.deadline * 1000).toISOString()}`);
    const wallet = createWalletClient({
      account: buyerAccount,
      chain: defineChain({ id: chain.chainId, name: "sandbox", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chain.rpcUrl] } } }),
      transport: viemHttp(chain.rpcUrl),
    }).extend(publicActions);
    const lockTx = await wallet.writeContract({
      address: permit.escrowAddress,
      abi: escrowAbi,
      functionName: "lock",
      args: [{ orderId: permit.permit.orderId, buyer: permit.permit.buyer, deadline: BigInt(permit.permit.deadline) }, permit.signature],
    });
    const lockReceipt = await wallet.waitForTransactionReceipt({ hash: lockTx, timeout: STEP_TIMEOUT_MS });
    if (lockReceipt.status !== "success") throw new DemoError(`the lock transaction ${lockTx} reverted`);
    log(`buyer wallet ${buyerAccount.address} locked the order with the permit (tx ${lockTx})`);
    const locked = await reach("LOCKED");
    log(`order LOCKED until ${String(locked.lockExpiresAt)}`);
    const trade = await call<{ payment: { clabe: string; bankName: string; amountMxn: number; concept: string } }>("GET", `/market/v1/trades/${order.escrowOrderId}`, buyer);
    log(`the market tells the buyer to pay ${trade.payment.amountMxn} MXN to CLABE ${trade.payment.clabe} (${trade.payment.bankName}) with concept ${trade.payment.concept}`);
    const paid = await call<{ trackingKey: string; senderBankCode: string; operationDate: string }>("POST", `/market/v1/sandbox/trades/${order.escrowOrderId}/spei`, buyer, {
      payerName: buyerName.toUpperCase(),
    });
    log(`buyer paid ${order.totalMxn} MXN by SPEI from its own account, in the name ${buyerName.toUpperCase()} (tracking key ${paid.trackingKey}, bank ${paid.senderBankCode}, simulated)`);
    const reported = await call<{ paymentReport: { verification: string } }>("POST", `/market/v1/trades/${order.escrowOrderId}/payment`, buyer, {
      trackingKey: paid.trackingKey,
      operationDate: paid.operationDate,
      senderBankCode: paid.senderBankCode,
    });
    log(`buyer reported the payment through the market (verification ${reported.paymentReport.verification})`);
    const verified = await reach("PENDING_RELEASE");
    log(`CEP fetched from the central bank's portal and verified at ${String(verified.cepValidatedAt)}: the payer is the buyer, order PENDING_RELEASE, release sent`);
    const completed = await reach("COMPLETED");
    log(`order COMPLETED at ${String(completed.completedAt)}: USDC released to the buyer (tx ${String(completed.releaseTxHash)})`);

    await until("the order.completed webhook", async () => (webhooks.some((webhook) => webhook.event === "order.completed") ? true : undefined), 30_000).catch(() => {
      log("no order.completed webhook within 30 s (see GET /api/v1/webhooks)");
    });
    const bad = webhooks.filter((webhook) => !webhook.signatureOk);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(`Trade completed in ${seconds} s; ${webhooks.length} webhooks received, ${bad.length === 0 ? "all correctly signed" : `${bad.length} with an INVALID signature`}.\n`);
    return bad.length === 0 && webhooks.some((webhook) => webhook.event === "order.completed") ? 0 : 1;
  } finally {
    await receiver.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof OfframpApiError) {
      process.stderr.write(`demo: the partner API answered ${error.status} ${error.code}: ${error.message} (X-Request-Id ${error.requestId})\n`);
    } else if (error instanceof DemoError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`demo: ${(error as Error).message}\n${error instanceof DemoError ? "" : `${USAGE}\n`}`);
    } else {
      process.stderr.write(`demo failed: ${(error as Error).stack ?? String(error)}\n`);
    }
    process.exit(1);
  },
);
