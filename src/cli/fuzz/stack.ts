// The service the fuzzer starts for itself: a Hardhat node with the escrow, Ponder, a fresh database
// (startChainStack, shared with the tests and the bench), the service on it, and a webhook receiver
// that answers 200 at once, so deliveries settle instead of retrying into the data check.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ADMIN_TOKEN, startTestService, type TestService } from "../../../test/support/service.ts";
import { startChainStack, type ChainStack } from "../../../test/support/trade-stack.ts";

export interface FuzzStack {
  baseUrl: string;
  adminToken: string;
  databaseUrl: string;
  webhookUrl: string;
  service: TestService;
  chain: ChainStack;
  close(): Promise<void>;
}

/**
 * The service's settings for a fuzz run: quotes and deposits outlive the run (so fixture quotes stay
 * usable and no timer fires into the data check), and the client address is taken from X-Forwarded-For
 * (one proxy in front)
 * so each unauthenticated request can be counted in a window of its own instead of all sharing one.
 */
export const FUZZ_SERVICE_ENV = { QUOTE_TTL_SECONDS: "86400", DEPOSIT_TIMEOUT_SECONDS: "86400", TRUST_PROXY: "1" };

export async function startReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    request.resume();
    request.on("end", () => response.writeHead(200, { "content-type": "text/plain" }).end("ok"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export async function startFuzzStack(log: (line: string) => void): Promise<FuzzStack> {
  const chain = await startChainStack();
  try {
    log(`chain ${chain.chain.rpcUrl}, database ${chain.databaseUrl.replace(/\/\/[^@]*@/, "//")}`);
    const service = await startTestService(FUZZ_SERVICE_ENV, { databaseUrl: chain.databaseUrl, indexerSchema: chain.indexerSchema, chain: chain.chainSettings });
    const receiver = await startReceiver();
    log(`service ${service.baseUrl}`);
    return {
      baseUrl: service.baseUrl,
      adminToken: ADMIN_TOKEN,
      databaseUrl: chain.databaseUrl,
      webhookUrl: receiver.url,
      service,
      chain,
      async close() {
        await receiver.close();
        await service.close();
        await chain.close();
      },
    };
  } catch (error) {
    await chain.close();
    throw error;
  }
}
