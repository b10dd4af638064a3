// The local Hardhat node logs every JSON-RPC request and mined transaction only when asked: under a trade
// load those lines cost the node and whoever reads its output CPU (docs/benchmarks.md, stop 53), and only
// the sandbox at LOG_LEVEL=trace shows them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { nodeRpc, startLocalChain } from "../../src/stack/local-node.ts";

/** The lines the node prints while answering `calls` eth_blockNumber requests, once it has started. */
async function linesPrintedFor(calls: number, logRequests: boolean | undefined): Promise<string[]> {
  const lines: string[] = [];
  let started = false;
  const chain = await startLocalChain({ port: 0, ...(logRequests === undefined ? {} : { logRequests }), onLog: (line) => started && lines.push(line) });
  started = true;
  try {
    for (let call = 0; call < calls; call += 1) await nodeRpc(chain.rpcUrl, "eth_blockNumber");
    // The node prints after it answers: give its output a moment to arrive.
    await new Promise((resolve) => setTimeout(resolve, 300));
    return lines;
  } finally {
    await chain.stop();
  }
}

test("the local node prints no request log by default", async () => {
  assert.deepEqual(await linesPrintedFor(3, undefined), []);
});

test("the local node logs each request when logRequests is set", async () => {
  const lines = await linesPrintedFor(3, true);
  assert.ok(lines.some((line) => line.includes("eth_blockNumber")), `no request logged: ${JSON.stringify(lines)}`);
});
