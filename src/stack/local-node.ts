// A local Hardhat JSON-RPC node (chain id 31337) run as a child process, for the sandbox (`npm start`
// without RPC_URL) and for end-to-end tests. The node keeps its chain in memory only: a restart starts
// from block 0, so callers redeploy (src/stack/deploy.ts) after starting it.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import path from "node:path";
import type { Address, Hex } from "viem";
import { repoRoot } from "../paths.ts";
import { LOCAL_CHAIN_ID } from "../config.ts";
import { orphanWatchdogArgs } from "./orphan-watchdog.ts";


const hardhatCli = path.join(repoRoot, "node_modules/hardhat/dist/src/cli.js");

/**
 * The well-known Hardhat development accounts (mnemonic "test test ... junk", each funded with
 * 10,000 ETH on a local node). Public knowledge: never use them on a real chain.
 * Index 0 deploys (and keeps no role), 1 is the service signer (SERVICE_ROLE), 2 the arbiter
 * (ARBITER_ROLE), 3 the treasury; 4 to 9 are sandbox wallets (sellers and buyers); 10 is the escrow's
 * admin (DEFAULT_ADMIN_ROLE: pause, roles, allow-list, treasury, stray-token recovery), a key of its
 * own, never a sandbox wallet, as ADMIN_ADDRESS is a multisig of its own outside the sandbox.
 */
export const devAccounts = [
  {
    index: 0,
    role: "deployer",
    address: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    privateKey: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  },
  {
    index: 1,
    role: "service",
    address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    privateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  },
  {
    index: 2,
    role: "arbiter",
    address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    privateKey: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  },
  {
    index: 3,
    role: "treasury",
    address: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    privateKey: "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  },
  {
    index: 4,
    role: "sandbox",
    address: "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
    privateKey: "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  },
  {
    index: 5,
    role: "sandbox",
    address: "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
    privateKey: "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  },
  {
    index: 6,
    role: "sandbox",
    address: "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
    privateKey: "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  },
  {
    index: 7,
    role: "sandbox",
    address: "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
    privateKey: "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  },
  {
    index: 8,
    role: "sandbox",
    address: "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
    privateKey: "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  },
  {
    index: 9,
    role: "sandbox",
    address: "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
    privateKey: "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
  },
  {
    index: 10,
    role: "admin",
    address: "0xBcd4042DE499D14e55001CcbB24a551F3b954096",
    privateKey: "0xf214f2b2cd398c806f84e317254e0f0b801d0643303237d97a22a48e01628897",
  },
] as const satisfies readonly { index: number; role: string; address: Address; privateKey: Hex }[];

export type DevAccount = (typeof devAccounts)[number];

/** Indices into devAccounts by role. */
export const DEV_ACCOUNT = { deployer: 0, service: 1, arbiter: 2, treasury: 3, firstSandbox: 4, admin: 10 } as const;

/** The sandbox sellers' and buyers' wallets (devAccounts 4 to 9). */
export const sandboxAccounts: readonly DevAccount[] = devAccounts.filter((account) => account.role === "sandbox");

/**
 * The index (into sandboxAccounts) of the sandbox wallet on the sandbox sanctions list
 * (data/sanctions/sandbox-sdn.csv), so sanctioned buyers can be tried: an order it locks is held
 * (SANCTIONS_HOLD) and never released, so it must not be a buyer where trades are meant to complete.
 */
export const SANCTIONED_SANDBOX_WALLET = 5;

/** The sandbox wallets whose trades can complete: all but the sanctioned one. */
export const unsanctionedSandboxAccounts: readonly DevAccount[] = sandboxAccounts.filter((_, index) => index !== SANCTIONED_SANDBOX_WALLET);

export interface LocalChainOptions {
  /** TCP port; 0 picks a free one (read back from the node's output). Default 8545. */
  port?: number;
  /** Listen address. Default 127.0.0.1. */
  host?: string;
  /** How long to wait for the node to answer eth_chainId. Default 60 s. */
  startTimeoutMs?: number;
  /** How long stop() waits after SIGTERM before SIGKILL. Default 5 s. */
  stopTimeoutMs?: number;
  /**
   * Receives every line the node prints. The node logs each JSON-RPC request and mined transaction only
   * when `logRequests` is set; by default the lines are dropped.
   */
  onLog?: (line: string) => void;
  /** Keep the node's request log on (`hardhat node` turns it on). Default false. */
  logRequests?: boolean;
}

export interface LocalChain {
  rpcUrl: string;
  /** The same node's WebSocket endpoint (one port serves both), for `eth_subscribe("newHeads")`. */
  wsUrl: string;
  chainId: number;
  pid: number;
  /** SIGTERM, then SIGKILL after stopTimeoutMs; resolves once the process has exited. */
  stop(): Promise<void>;
}

const STARTED_LINE = /JSON-RPC server at (http:\/\/[^\s/]+:(\d+))\//;

/** Spawns `hardhat node` (chain id 31337) and resolves once it answers JSON-RPC. */
export async function startLocalChain(options: LocalChainOptions = {}): Promise<LocalChain> {
  const port = options.port ?? 8545;
  const host = options.host ?? "127.0.0.1";
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 5_000;

  const child = spawn(process.execPath, [...orphanWatchdogArgs(), hardhatCli, "node", "--port", String(port), "--hostname", host], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FORCE_COLOR: "0", NO_COLOR: "1" },
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error("could not spawn hardhat node");

  let exited = false;
  const exitPromise = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
  });
  // Never leave the node behind when this process exits without calling stop().
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const recent: string[] = [];
  let resolveUrl: (url: string) => void = () => {};
  const urlPromise = new Promise<string>((resolve) => (resolveUrl = resolve));
  const onLine = (line: string) => {
    recent.push(line);
    if (recent.length > 40) recent.shift();
    const match = STARTED_LINE.exec(line);
    if (match?.[2] !== undefined) resolveUrl(`http://${host.includes(":") ? `[${host}]` : host}:${match[2]}`);
    options.onLog?.(line);
  };
  for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream, crlfDelay: Infinity }).on("line", onLine);

  const stop = async () => {
    process.removeListener("exit", killOnExit);
    if (exited) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => {
      if (!exited) child.kill("SIGKILL");
    }, stopTimeoutMs);
    await exitPromise;
    clearTimeout(timer);
  };

  const failure = (why: string) =>
    new Error(`hardhat node ${why}; last output:\n${recent.join("\n")}`);

  try {
    const deadline = Date.now() + startTimeoutMs;
    const rpcUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(failure(`did not start within ${startTimeoutMs} ms`)), startTimeoutMs);
      void urlPromise.then((url) => {
        clearTimeout(timer);
        resolve(url);
      });
      void exitPromise.then(() => {
        clearTimeout(timer);
        reject(failure(`exited early (code ${child.exitCode ?? "?"})`));
      });
    });
    for (;;) {
      if (exited) throw failure("exited during start-up");
      const chainId = await rpcChainId(rpcUrl);
      if (chainId !== undefined) {
        if (chainId !== LOCAL_CHAIN_ID) throw failure(`answered chain id ${chainId}, expected ${LOCAL_CHAIN_ID}`);
        // `hardhat node` logs every request and mined transaction: lines nobody reads unless asked, which
        // cost the node and its reader CPU under a trade load (docs/benchmarks.md, stop 53).
        if (options.logRequests !== true) await nodeRpc(rpcUrl, "hardhat_setLoggingEnabled", [false]);
        return { rpcUrl, wsUrl: rpcUrl.replace(/^http:/, "ws:"), chainId, pid, stop };
      }
      if (Date.now() > deadline) throw failure(`did not answer eth_chainId within ${startTimeoutMs} ms`);
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw error;
  }
}

/** One JSON-RPC call to the node, Hardhat's own methods included; throws the node's error. */
export async function nodeRpc<T = unknown>(rpcUrl: string, method: string, params: unknown[] = [], timeoutMs = 10_000): Promise<T> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await response.json()) as { result?: T; error?: { message?: string } };
  if (body.error !== undefined || body.result === undefined) throw new Error(`${method} at ${rpcUrl} failed: ${body.error?.message ?? response.status}`);
  return body.result;
}

async function rpcChainId(rpcUrl: string): Promise<number | undefined> {
  try {
    const result = await nodeRpc(rpcUrl, "eth_chainId", [], 2_000);
    return typeof result === "string" ? Number.parseInt(result, 16) : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
