// The service's way to the chain (src/chain/rpc-transport.ts, decisions 7): RPC_URL's endpoints, retries of
// calls that are safe to repeat (raw transactions included), and which failures mean "the chain cannot be
// reached" (503 CHAIN_UNAVAILABLE) rather than an answer from the chain.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { BaseError, createPublicClient, HttpRequestError, InvalidInputRpcError, RpcRequestError, WaitForTransactionReceiptTimeoutError, type Hex } from "viem";
import { startRpcFaultProxy, type RpcFaultProxy } from "../../src/cli/chaos/rpc-proxy.ts";
import { chainTransport, isChainUnreachable, rpcEndpoints } from "../../src/chain/rpc-transport.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";

const HASH = `0x${"ab".repeat(32)}` as Hex;

describe("RPC_URL", () => {
  test("lists endpoints, comma-separated, in order", () => {
    assert.deepEqual(rpcEndpoints(" http://a.example/rpc/ ,https://b.example"), ["http://a.example/rpc", "https://b.example"]);
    assert.equal(loadConfig({ RPC_URL: "http://a.example/, https://b.example/v1" }).rpcUrl, "http://a.example,https://b.example/v1");
  });

  test("an endpoint that is not an http(s) URL stops the start naming RPC_URL", () => {
    assert.throws(() => loadConfig({ RPC_URL: "http://a.example,ftp://b.example" }), (error: unknown) => error instanceof ConfigError && error.variable === "RPC_URL");
  });

  test("SIGNER_MIN_BALANCE_ETH is an amount of ETH, 0.05 by default", () => {
    assert.equal(loadConfig({}).signerMinBalanceEth, "0.05");
    assert.equal(loadConfig({ SIGNER_MIN_BALANCE_ETH: "1.5" }).signerMinBalanceEth, "1.5");
    assert.throws(() => loadConfig({ SIGNER_MIN_BALANCE_ETH: "-1" }), (error: unknown) => error instanceof ConfigError && error.variable === "SIGNER_MIN_BALANCE_ETH");
  });
});

describe("a raw transaction meets refusals", () => {
  let upstream: http.Server;
  let proxy: RpcFaultProxy;
  let sends = 0;
  before(async () => {
    // A node that takes every raw transaction.
    upstream = http.createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        // One call or a batch of them (the transport batches the calls of one tick).
        const parsed = JSON.parse(body) as { id: number; method: string } | { id: number; method: string }[];
        const calls = Array.isArray(parsed) ? parsed : [parsed];
        sends += calls.filter((call) => call.method === "eth_sendRawTransaction").length;
        const answers = calls.map((call) => ({ jsonrpc: "2.0", id: call.id, result: HASH }));
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    // The first two requests get a 5xx, the rest pass.
    const draws = [0, 0, 0, 0];
    proxy = await startRpcFaultProxy({ upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, faults: { serverError: 0.5 }, random: () => draws.shift() ?? 0.99 });
  });
  after(async () => {
    await proxy.close();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  test("it is sent again (viem alone sends it once) and gets through", async () => {
    const client = createPublicClient({ transport: chainTransport(proxy.url) });
    assert.equal(await client.sendRawTransaction({ serializedTransaction: "0x02" }), HASH);
    assert.equal(proxy.counts.serverError, 2);
    assert.equal(sends, 1);
  });
});

describe("what counts as the chain out of reach", () => {
  const wrapped = (cause: Error) => new BaseError("call failed", { cause });

  test("refused or failed connections, timeouts and receipts that do not come", () => {
    assert.equal(isChainUnreachable(wrapped(new HttpRequestError({ url: "http://x", status: 503 }))), true);
    assert.equal(isChainUnreachable(new RpcRequestError({ body: {}, url: "http://x", error: { code: 429, message: "Too Many Requests" } })), true);
    assert.equal(isChainUnreachable(new WaitForTransactionReceiptTimeoutError({ hash: HASH })), true);
  });

  test("not an answer of the chain (a refused nonce, a revert) nor an error from elsewhere", () => {
    assert.equal(isChainUnreachable(new InvalidInputRpcError(new Error("Nonce too low"))), false);
    assert.equal(isChainUnreachable(new Error("database down")), false);
  });
});
