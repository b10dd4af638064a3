// Ponder configuration of the escrow indexer (loaded by Ponder's vite-node through the one-line shim
// indexer/ponder.config.ts; `ponder start --root indexer`). Every setting comes from the environment,
// which src/stack/indexer-process.ts passes explicitly:
//
//   DATABASE_URL         PostgreSQL connection string (required: the service reads the tables)
//   RPC_URL              JSON-RPC endpoints of the chain, comma-separated (default http://127.0.0.1:8545).
//                        Ponder balances its requests over them by latency, retries a failed request (9
//                        times, with backoff) on whichever is available, and rests an endpoint that answers
//                        429 or times out; one that never answers is never preferred again.
//   CHAIN_ID             chain id (default 31337, the local Hardhat node)
//   ESCROW_ADDRESS       escrow contract address, with ESCROW_START_BLOCK (its deployment block) ...
//   ESCROW_START_BLOCK
//   DEPLOYMENT_FILE      ... or the deployment JSON written by src/stack/deploy.ts
//   PONDER_WS_URL        a WebSocket endpoint of the chain (RPC_WS_URL of the service; the node's own on the
//                        local chain): Ponder subscribes to new heads there instead of polling for the head,
//                        takes the first at once and then at most one a polling interval, and fetches the
//                        blocks over RPC_URL (patched: docs/operations.md section 3). Unset: polling only.
//                        A socket that does not answer a ping within 20 polling intervals, or whose subscription
//                        leaves a head unannounced (the Hardhat node drops one after 5 minutes), is cut and
//                        subscribed again; after 9 failed connections in a row Ponder polls instead.
//   PONDER_POLLING_INTERVAL_MS  how often Ponder asks the node for a new block: default 100 ms (Ponder's
//                        minimum) on 31337, where a block exists the moment its transaction is sent and
//                        the node is ours; else 1000 ms, a provider's rate limit in mind
//   PONDER_RPC_LANES     how many times each RPC_URL endpoint is given to Ponder (default 4 on 31337, else 1). Ponder
//                        throttles each RPC endpoint it is given to 20 requests/s at start and raises that
//                        only after 10 s of saturated use, so one lane caps a backfill at about 20 blocks/s
//                        (one eth_getBlockByNumber per block with events). A provider with a known higher
//                        rate limit may be given more lanes.
//   PONDER_DB_POOL_MAX   PostgreSQL connections Ponder may open (default 12)
//
// On the local chain the RPC cache (ponder_sync) is disabled: a Hardhat node keeps its chain in memory,
// so a restarted node reuses chain id 31337 for a different chain and cached blocks would be wrong.
import { readFileSync } from "node:fs";
import { createConfig } from "ponder";
import { getAddress, isAddress } from "viem";
import { escrowAbi } from "./src/chain/escrow-abi.ts";
import { isUrlOf } from "./src/config.ts";
import { rpcEndpoints } from "./src/chain/rpc-transport.ts";

const LOCAL_CHAIN_ID = 31337;

function fail(message: string): never {
  throw new Error(`indexer configuration: ${message}`);
}

function integerEnv(name: string, fallback?: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") {
    if (fallback === undefined) fail(`${name} is required`);
    return fallback;
  }
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) fail(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

function escrowLocation(chainId: number): { address: `0x${string}`; startBlock: number } {
  const address = process.env.ESCROW_ADDRESS;
  if (address !== undefined && address !== "") {
    if (!isAddress(address, { strict: false })) fail(`ESCROW_ADDRESS is not an address: "${address}"`);
    return { address: getAddress(address), startBlock: integerEnv("ESCROW_START_BLOCK") };
  }
  const file = process.env.DEPLOYMENT_FILE;
  if (file === undefined || file === "") fail("set ESCROW_ADDRESS and ESCROW_START_BLOCK, or DEPLOYMENT_FILE");
  let deployment: { chainId?: unknown; escrowAddress?: unknown; deploymentBlock?: unknown };
  try {
    deployment = JSON.parse(readFileSync(file, "utf8")) as typeof deployment;
  } catch (error) {
    fail(`cannot read DEPLOYMENT_FILE ${file}: ${(error as Error).message}`);
  }
  const { escrowAddress, deploymentBlock } = deployment;
  if (typeof escrowAddress !== "string" || !isAddress(escrowAddress, { strict: false })) {
    fail(`${file} has no valid escrowAddress`);
  }
  if (typeof deploymentBlock !== "number" || !Number.isSafeInteger(deploymentBlock) || deploymentBlock < 0) {
    fail(`${file} has no valid deploymentBlock`);
  }
  if (deployment.chainId !== chainId) fail(`${file} is for chain ${String(deployment.chainId)}, CHAIN_ID is ${chainId}`);
  return { address: getAddress(escrowAddress), startBlock: deploymentBlock };
}

const databaseUrl = process.env.DATABASE_URL;
if (databaseUrl === undefined || databaseUrl === "") fail("DATABASE_URL is required");
const chainId = integerEnv("CHAIN_ID", LOCAL_CHAIN_ID);
const isLocal = chainId === LOCAL_CHAIN_ID;
const escrow = escrowLocation(chainId);
const endpoints = rpcEndpoints(process.env.RPC_URL || "http://127.0.0.1:8545");
const newHeadsUrl = process.env.PONDER_WS_URL || undefined;
if (newHeadsUrl !== undefined && !isUrlOf(newHeadsUrl, ["ws:", "wss:"])) fail(`PONDER_WS_URL must be a ws:// or wss:// URL, got "${newHeadsUrl}"`);
const rpcLanes = integerEnv("PONDER_RPC_LANES", isLocal ? 4 : 1);
if (rpcLanes < 1) fail("PONDER_RPC_LANES must be at least 1");

export default createConfig({
  database: {
    kind: "postgres",
    connectionString: databaseUrl,
    poolConfig: { max: integerEnv("PONDER_DB_POOL_MAX", 12) },
  },
  chains: {
    offramp: {
      id: chainId,
      rpc: endpoints.flatMap((endpoint) => Array.from({ length: rpcLanes }, () => endpoint)),
      pollingInterval: integerEnv("PONDER_POLLING_INTERVAL_MS", isLocal ? 100 : 1_000),
      disableCache: isLocal,
      ...(newHeadsUrl === undefined ? {} : { ws: newHeadsUrl }),
    },
  },
  contracts: {
    OfframpEscrow: {
      chain: "offramp",
      abi: escrowAbi,
      address: escrow.address,
      startBlock: escrow.startBlock,
    },
  },
  // Every block from the chain head at start-up on: moves indexer_head in the same transaction as the
  // block's events, so a consumer knows up to which block escrow_event is complete (see
  // indexer/ponder.schema.ts). "latest" keeps the backfill from visiting every historical block.
  blocks: {
    IndexerHead: {
      chain: "offramp",
      startBlock: "latest",
      interval: 1,
    },
  },
});
