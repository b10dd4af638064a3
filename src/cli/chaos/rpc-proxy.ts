// A JSON-RPC proxy that misbehaves as public RPC providers do (decisions 7 and 15), put between the stack
// (service, indexer) and the chain: it answers some requests with HTTP 429 or a 5xx, resets some
// connections (before or after the request reached the node, so a sent transaction's answer can be
// lost), holds some until the client times out, adds a delay, serves a head lagging some blocks behind,
// refuses eth_getLogs over a wide block range, and holds the calls of given methods until released.
// Every fault it causes is counted. Used by the tests of RPC failover (test/chain/) and by `npm run chaos`.
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface RpcFaults {
  /** Share of requests answered HTTP 429 (0 to 1). */
  rateLimited: number;
  /** Share answered HTTP 500, 502 or 503. */
  serverError: number;
  /** Share whose connection is reset: half before the node sees the request, half after it answered. */
  reset: number;
  /** Share held without an answer for `timeoutHoldMs`, then cut (the client's own timeout fires first). */
  timeout: number;
  timeoutHoldMs: number;
  /** Delay added to every request, uniformly between the two (ms). */
  delayMs: [number, number];
  /** Blocks the served head lags behind the node's ("latest" means that many blocks earlier). */
  lagBlocks: number;
  /** Widest eth_getLogs block range served (0: no limit); wider ones get a provider's "Max range" error. */
  maxLogRange: number;
  /** Refuses every connection, as an endpoint that is down. */
  dead: boolean;
}

export const NO_FAULTS: RpcFaults = { rateLimited: 0, serverError: 0, reset: 0, timeout: 0, timeoutHoldMs: 15_000, delayMs: [0, 0], lagBlocks: 0, maxLogRange: 0, dead: false };

/** What public providers do on a bad day (issue 22): 5 % 429, 3 % 5xx, 2 % resets, 0 to 150 ms added. */
export const PUBLIC_PROVIDER_FAULTS: Partial<RpcFaults> = { rateLimited: 0.05, serverError: 0.03, reset: 0.02, delayMs: [0, 150] };

export type FaultName = "rateLimited" | "serverError" | "resetBefore" | "resetAfter" | "timeout" | "delayed" | "lagged" | "logRangeRefused" | "deadRefused";

export interface RpcFaultProxy {
  url: string;
  /** Requests received, and how many of each fault was caused. */
  readonly counts: { requests: number } & Record<FaultName, number>;
  /** Changes the faults from now on (e.g. an endpoint going down mid-run). */
  setFaults(faults: Partial<RpcFaults>): void;
  /** Holds every request calling one of `methods` until the returned release is called: an endpoint slow to answer them. */
  hold(methods: readonly string[]): () => void;
  close(): Promise<void>;
}

interface JsonRpcRequest {
  jsonrpc: "2.0";
  id: unknown;
  method: string;
  params?: unknown[];
}

/** Parameter position of the block tag, per method, where "latest" is served from the lagging head. */
const BLOCK_TAG_PARAM: Record<string, number> = {
  eth_getBlockByNumber: 0,
  eth_call: 1,
  eth_getBalance: 1,
  eth_getTransactionCount: 1,
  eth_getCode: 1,
  eth_getStorageAt: 2,
  eth_estimateGas: 1,
};

const toHex = (value: bigint) => `0x${value.toString(16)}`;

/** Starts the proxy on a free local port in front of `upstream` (a JSON-RPC HTTP endpoint). */
export async function startRpcFaultProxy(options: {
  upstream: string;
  faults?: Partial<RpcFaults>;
  random?: () => number;
  port?: number;
  /** Told of every call that reaches the node, before it is sent there (what a test checks was asked). */
  onCall?: (call: { method: string; params?: unknown[] }) => void;
}): Promise<RpcFaultProxy> {
  let faults: RpcFaults = { ...NO_FAULTS, ...options.faults };
  const random = options.random ?? Math.random;
  const counts = { requests: 0, rateLimited: 0, serverError: 0, resetBefore: 0, resetAfter: 0, timeout: 0, delayed: 0, lagged: 0, logRangeRefused: 0, deadRefused: 0 };
  const sockets = new Set<Socket>();
  const held = new Set<NodeJS.Timeout>();
  let holding: { methods: ReadonlySet<string>; released: Promise<void> } | undefined;

  const upstream = async (body: unknown): Promise<unknown> => {
    const response = await fetch(options.upstream, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return response.json();
  };
  const upstreamHead = async (): Promise<bigint> => BigInt(((await upstream({ jsonrpc: "2.0", id: 0, method: "eth_blockNumber", params: [] })) as { result: string }).result);

  /** One call as an endpoint `lagBlocks` behind would answer it. */
  const lagged = async (call: JsonRpcRequest, head: bigint): Promise<unknown> => {
    const served = head - BigInt(faults.lagBlocks) < 0n ? 0n : head - BigInt(faults.lagBlocks);
    const params = [...(call.params ?? [])];
    const reply = (result: unknown) => ({ jsonrpc: "2.0", id: call.id, result });
    if (call.method === "eth_blockNumber") return reply(toHex(served));
    const tagAt = BLOCK_TAG_PARAM[call.method];
    if (tagAt !== undefined) {
      const tag = params[tagAt];
      if (tag === "latest" || (tag === undefined && call.method !== "eth_estimateGas")) params[tagAt] = toHex(served);
      else if (typeof tag === "string" && tag.startsWith("0x") && BigInt(tag) > served) return reply(null);
    }
    if (call.method === "eth_getLogs" && params[0] && typeof params[0] === "object") {
      const filter = { ...(params[0] as Record<string, unknown>) };
      for (const key of ["fromBlock", "toBlock"]) {
        const value = filter[key];
        if (value === "latest" || (typeof value === "string" && value.startsWith("0x") && BigInt(value) > served)) filter[key] = toHex(served);
      }
      params[0] = filter;
    }
    const answer = (await upstream({ ...call, params })) as { result?: Record<string, unknown> | null };
    // A transaction in a block the lagging endpoint has not seen: no receipt yet, still pending.
    const block = answer.result && typeof answer.result === "object" ? answer.result.blockNumber : undefined;
    if (typeof block === "string" && BigInt(block) > served) {
      if (call.method === "eth_getTransactionReceipt") return reply(null);
      if (call.method === "eth_getTransactionByHash") return reply({ ...answer.result, blockHash: null, blockNumber: null, transactionIndex: null });
    }
    return answer;
  };

  const logRangeRefusal = (call: JsonRpcRequest): unknown => {
    if (call.method !== "eth_getLogs" || faults.maxLogRange <= 0) return undefined;
    const filter = (call.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string };
    if (!filter.fromBlock?.startsWith("0x") || !filter.toBlock?.startsWith("0x")) return undefined;
    if (BigInt(filter.toBlock) - BigInt(filter.fromBlock) + 1n <= BigInt(faults.maxLogRange)) return undefined;
    counts.logRangeRefused += 1;
    return { jsonrpc: "2.0", id: call.id, error: { code: -32005, message: `block range too large. Max range: ${faults.maxLogRange}` } };
  };

  const answer = async (body: JsonRpcRequest | JsonRpcRequest[]): Promise<unknown> => {
    const calls = Array.isArray(body) ? body : [body];
    while (holding && calls.some((call) => holding!.methods.has(call.method))) await holding.released;
    for (const call of calls) options.onCall?.(call);
    const head = faults.lagBlocks > 0 ? await upstreamHead() : 0n;
    if (faults.lagBlocks > 0) counts.lagged += 1;
    const answers = await Promise.all(calls.map((call) => logRangeRefusal(call) ?? (faults.lagBlocks > 0 ? lagged(call, head) : upstream(call))));
    return Array.isArray(body) ? answers : answers[0];
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      void (async () => {
        counts.requests += 1;
        if (faults.dead) {
          counts.deadRefused += 1;
          request.socket.destroy();
          return;
        }
        const [low, high] = faults.delayMs;
        if (high > 0) {
          counts.delayed += 1;
          await new Promise((resolve) => setTimeout(resolve, low + random() * (high - low)));
        }
        // One draw per request decides its fault, so the shares add up as configured.
        let draw = random();
        const pick = (share: number) => {
          const hit = draw < share;
          draw -= share;
          return hit;
        };
        if (pick(faults.rateLimited)) {
          counts.rateLimited += 1;
          response.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: 429, message: "Too Many Requests" } }));
          return;
        }
        if (pick(faults.serverError)) {
          counts.serverError += 1;
          const status = [500, 502, 503][Math.floor(random() * 3)]!;
          response.writeHead(status, { "content-type": "text/plain" }).end("upstream error");
          return;
        }
        if (pick(faults.timeout)) {
          counts.timeout += 1;
          const timer = setTimeout(() => {
            held.delete(timer);
            request.socket.destroy();
          }, faults.timeoutHoldMs);
          held.add(timer);
          return;
        }
        const reset = pick(faults.reset);
        const resetBefore = reset && random() < 0.5;
        if (resetBefore) {
          counts.resetBefore += 1;
          request.socket.destroy();
          return;
        }
        let result: unknown;
        try {
          result = await answer(JSON.parse(Buffer.concat(chunks).toString("utf8")) as JsonRpcRequest | JsonRpcRequest[]);
        } catch {
          response.writeHead(502, { "content-type": "text/plain" }).end("upstream unreachable");
          return;
        }
        if (reset) {
          // The node did the work; its answer is lost on the way back.
          counts.resetAfter += 1;
          request.socket.destroy();
          return;
        }
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
      })();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    setFaults(change) {
      faults = { ...faults, ...change };
    },
    hold(methods) {
      let release!: () => void;
      const hold = { methods: new Set(methods), released: new Promise<void>((resolve) => (release = resolve)) };
      holding = hold;
      return () => {
        if (holding === hold) holding = undefined;
        release();
      };
    },
    async close() {
      for (const timer of held) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
