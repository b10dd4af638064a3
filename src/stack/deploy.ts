// Deploys the escrow (and, in sandbox, the test USDC) with viem alone: no Hardhat runtime is loaded,
// only the compiled artifacts are read (run `hardhat compile` first, or call compileContracts()).
import { execFile } from "node:child_process";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  isAddress,
  isHex,
  keccak256,
  toBytes,
  zeroAddress,
} from "viem";
import type { Abi, Address, Hash, Hex, PublicClient, Transport } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../chain/escrow-abi.ts";
import { chainTransport, rpcEndpoints } from "../chain/rpc-transport.ts";
import { DEV_ACCOUNT, devAccounts } from "./local-node.ts";
import { repoRoot } from "../paths.ts";


export const defaultArtifactsDir = path.join(repoRoot, "artifacts");

export const SERVICE_ROLE: Hex = keccak256(toBytes("SERVICE_ROLE"));
export const ARBITER_ROLE: Hex = keccak256(toBytes("ARBITER_ROLE"));
export const DEFAULT_ADMIN_ROLE: Hex = `0x${"00".repeat(32)}`;

/** Default REFUND_GRACE_SECONDS of the escrow (decisions 19). */
export const DEFAULT_REFUND_GRACE_SECONDS = 3600;

/** What deployContracts writes to the deployment file (JSON) and returns. */
export interface Deployment {
  chainId: number;
  escrowAddress: Address;
  usdcAddress: Address;
  /** Block of the escrow's deployment: where an indexer starts. */
  deploymentBlock: number;
  /** ISO 8601 UTC timestamp of the deployment. */
  deployedAt: string;
}

export interface DeployOptions {
  rpcUrl: string;
  /** Deploys and pays gas; holds DEFAULT_ADMIN_ROLE only while deploying, then renounces it (keeps no role). */
  deployerPrivateKey: Hex;
  /** Receives DEFAULT_ADMIN_ROLE (ADMIN_ADDRESS: a multisig in production); must not be the deployer. */
  adminAddress: Address;
  /** Granted SERVICE_ROLE (signs order terms, confirms payments, cancels). */
  serviceAddress: Address;
  /** Granted ARBITER_ROLE (resolves disputes). */
  arbiterAddress: Address;
  /** Receives the service's revenue share of partner fees. */
  treasuryAddress: Address;
  /** The escrow's REFUND_GRACE_SECONDS (immutable); default 3600. */
  refundGraceSeconds?: number;
  /** An existing USDC token; when absent a TestUSDC is deployed (sandbox only). */
  usdcAddress?: Address;
  /** Where to write the deployment JSON (directories are created); not written when absent. */
  deploymentFile?: string;
  /** Hardhat artifacts directory; default <repo>/artifacts. */
  artifactsDir?: string;
  /** Overrides the HTTP transport built from rpcUrl (e.g. an in-process provider in tests). */
  transport?: Transport;
  /** Receipt polling interval; default 250 ms. */
  pollingIntervalMs?: number;
  /** Progress messages; silent by default. */
  log?: (message: string) => void;
}

interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

/** Reads `abi` and `bytecode` of a compiled contract from the Hardhat artifacts. */
export async function readArtifact(
  contract: "OfframpEscrow" | "TestUSDC",
  artifactsDir: string = defaultArtifactsDir,
): Promise<Artifact> {
  const file = path.join(artifactsDir, "contracts", `${contract}.sol`, `${contract}.json`);
  let raw: string;
  try {
    raw = await readFile(file, "utf8");
  } catch (error) {
    throw new Error(`missing artifact ${file}: run \`npm run compile\` (hardhat compile) first`, { cause: error });
  }
  const parsed = JSON.parse(raw) as { abi?: Abi; bytecode?: string };
  if (!Array.isArray(parsed.abi) || typeof parsed.bytecode !== "string" || !isHex(parsed.bytecode)) {
    throw new Error(`artifact ${file} has no abi or bytecode`);
  }
  return { abi: parsed.abi, bytecode: parsed.bytecode };
}

/** Runs `hardhat compile` in the repository (a no-op when nothing changed). */
export async function compileContracts(options: { quiet?: boolean } = {}): Promise<void> {
  const cli = path.join(repoRoot, "node_modules/hardhat/dist/src/cli.js");
  const args = [cli, "compile", ...(options.quiet === false ? [] : ["--quiet"])];
  const { stdout, stderr } = await promisify(execFile)(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, FORCE_COLOR: "0" },
    maxBuffer: 16 * 1024 * 1024,
  });
  if (options.quiet === false) process.stdout.write(stdout + stderr);
}

/**
 * Deploys TestUSDC (unless usdcAddress is given) and OfframpEscrow, grants SERVICE_ROLE and
 * ARBITER_ROLE, allow-lists the USDC token, hands DEFAULT_ADMIN_ROLE to adminAddress and renounces
 * the deployer's, checks on chain that the deployer holds no role left, waits for every receipt, and
 * writes the deployment file. Refuses a deployer that is also the admin, the service or the arbiter
 * (it would keep a role).
 */
export async function deployContracts(options: DeployOptions): Promise<Deployment> {
  const log = options.log ?? (() => {});
  for (const [name, value] of [
    ["adminAddress", options.adminAddress],
    ["serviceAddress", options.serviceAddress],
    ["arbiterAddress", options.arbiterAddress],
    ["treasuryAddress", options.treasuryAddress],
    ...(options.usdcAddress === undefined ? [] : [["usdcAddress", options.usdcAddress] as const]),
  ] as const) {
    if (!isAddress(value, { strict: false }) || getAddress(value) === zeroAddress) {
      throw new Error(`deployContracts: ${name} is not a non-zero address: ${String(value)}`);
    }
  }

  const refundGraceSeconds = options.refundGraceSeconds ?? DEFAULT_REFUND_GRACE_SECONDS;
  if (!Number.isSafeInteger(refundGraceSeconds) || refundGraceSeconds < 0 || refundGraceSeconds > 30 * 86_400) {
    throw new Error(`deployContracts: refundGraceSeconds must be an integer from 0 to 2592000 (30 days): ${String(options.refundGraceSeconds)}`);
  }

  const account = privateKeyToAccount(options.deployerPrivateKey);
  for (const [name, value] of [
    ["adminAddress", options.adminAddress],
    ["serviceAddress", options.serviceAddress],
    ["arbiterAddress", options.arbiterAddress],
  ] as const) {
    if (getAddress(value) === account.address) {
      throw new Error(`deployContracts: ${name} is the deployer's address; the deployer must keep no role`);
    }
  }
  const transport = options.transport ?? chainTransport(options.rpcUrl);
  const pollingInterval = options.pollingIntervalMs ?? 250;
  const publicClient = createPublicClient({ transport, pollingInterval });
  const chainId = await publicClient.getChainId();
  const chain = {
    id: chainId,
    name: `chain-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: rpcEndpoints(options.rpcUrl) } },
  } as const;
  const wallet = createWalletClient({ account, chain, transport, pollingInterval });
  const artifactsDir = options.artifactsDir ?? defaultArtifactsDir;

  let usdcAddress: Address;
  if (options.usdcAddress !== undefined) {
    usdcAddress = getAddress(options.usdcAddress);
    const code = await publicClient.getCode({ address: usdcAddress });
    if (code === undefined || code === "0x") throw new Error(`USDC_ADDRESS ${usdcAddress} has no contract code`);
    log(`using existing USDC at ${usdcAddress}`);
  } else {
    const usdc = await readArtifact("TestUSDC", artifactsDir);
    const hash = await wallet.deployContract({ abi: testUsdcAbi, bytecode: usdc.bytecode, args: [] });
    usdcAddress = (await waitFor(publicClient, hash, "TestUSDC deployment")).contractAddress;
    log(`TestUSDC deployed at ${usdcAddress}`);
  }

  const escrow = await readArtifact("OfframpEscrow", artifactsDir);
  const escrowHash = await wallet.deployContract({
    abi: escrowAbi,
    bytecode: escrow.bytecode,
    args: [account.address, getAddress(options.treasuryAddress), BigInt(refundGraceSeconds)],
  });
  const escrowReceipt = await waitFor(publicClient, escrowHash, "OfframpEscrow deployment");
  const escrowAddress = escrowReceipt.contractAddress;
  log(`OfframpEscrow deployed at ${escrowAddress} (block ${escrowReceipt.blockNumber})`);

  const grant = (role: Hex, to: Address) => () =>
    wallet.writeContract({ address: escrowAddress, abi: escrowAbi, functionName: "grantRole", args: [role, getAddress(to)] });
  const steps: (readonly [string, () => Promise<Hash>])[] = [
    ["grant SERVICE_ROLE", grant(SERVICE_ROLE, options.serviceAddress)],
    ["grant ARBITER_ROLE", grant(ARBITER_ROLE, options.arbiterAddress)],
    [
      "allow-list USDC",
      () => wallet.writeContract({ address: escrowAddress, abi: escrowAbi, functionName: "setTokenAllowed", args: [usdcAddress, true] }),
    ],
    ["grant DEFAULT_ADMIN_ROLE to the admin", grant(DEFAULT_ADMIN_ROLE, options.adminAddress)],
    [
      "the deployer renounces DEFAULT_ADMIN_ROLE",
      () => wallet.writeContract({ address: escrowAddress, abi: escrowAbi, functionName: "renounceRole", args: [DEFAULT_ADMIN_ROLE, account.address] }),
    ],
  ];
  for (const [what, send] of steps) {
    await waitFor(publicClient, await send(), what);
    log(`${what}: done`);
  }
  // The hand-over is checked on chain, not assumed: the admin holds the admin role, the deployer nothing.
  const hasRole = (role: Hex, who: Address) =>
    publicClient.readContract({ address: escrowAddress, abi: escrowAbi, functionName: "hasRole", args: [role, who] });
  if (!(await hasRole(DEFAULT_ADMIN_ROLE, getAddress(options.adminAddress)))) throw new Error("deployContracts: the admin did not get DEFAULT_ADMIN_ROLE");
  for (const role of [DEFAULT_ADMIN_ROLE, SERVICE_ROLE, ARBITER_ROLE]) {
    if (await hasRole(role, account.address)) throw new Error(`deployContracts: the deployer still holds role ${role}`);
  }

  const deployment: Deployment = {
    chainId,
    escrowAddress,
    usdcAddress,
    deploymentBlock: Number(escrowReceipt.blockNumber),
    deployedAt: new Date().toISOString(),
  };
  if (options.deploymentFile !== undefined) await writeDeployment(options.deploymentFile, deployment);
  return deployment;
}

async function waitFor(
  publicClient: PublicClient,
  hash: Hash,
  what: string,
): Promise<{ contractAddress: Address; blockNumber: bigint }> {
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 120_000 });
  if (receipt.status !== "success") throw new Error(`${what} reverted (tx ${hash})`);
  return { contractAddress: getAddress(receipt.contractAddress ?? zeroAddress), blockNumber: receipt.blockNumber };
}

/** Writes the deployment JSON atomically (temporary file, then rename). */
export async function writeDeployment(file: string, deployment: Deployment): Promise<void> {
  await mkdir(path.dirname(path.resolve(file)), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(deployment, null, 2)}\n`);
  await rename(temporary, file);
}

/** Reads and validates a deployment file written by deployContracts. */
export async function readDeployment(file: string): Promise<Deployment> {
  const value = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  const { chainId, escrowAddress, usdcAddress, deploymentBlock, deployedAt } = value;
  if (
    typeof chainId !== "number" ||
    !Number.isSafeInteger(chainId) ||
    typeof escrowAddress !== "string" ||
    !isAddress(escrowAddress, { strict: false }) ||
    typeof usdcAddress !== "string" ||
    !isAddress(usdcAddress, { strict: false }) ||
    typeof deploymentBlock !== "number" ||
    !Number.isSafeInteger(deploymentBlock) ||
    deploymentBlock < 0 ||
    typeof deployedAt !== "string" ||
    Number.isNaN(Date.parse(deployedAt))
  ) {
    throw new Error(`${file} is not a valid deployment file`);
  }
  return {
    chainId,
    escrowAddress: getAddress(escrowAddress),
    usdcAddress: getAddress(usdcAddress),
    deploymentBlock,
    deployedAt,
  };
}

/**
 * Deploys to a local chain with the development accounts (src/stack/local-node.ts): deployer 0, admin
 * 10, service 1, arbiter 2, treasury 3, unless `service` or `arbiter` is given (configured keys). What
 * start-up, the test stacks and the bench deploy.
 */
export async function deployLocal(
  options: { rpcUrl: string; service?: Address; arbiter?: Address } & Pick<DeployOptions, "refundGraceSeconds" | "deploymentFile" | "pollingIntervalMs">,
): Promise<Deployment> {
  const { service, arbiter, ...rest } = options;
  return deployContracts({
    deployerPrivateKey: devAccounts[DEV_ACCOUNT.deployer].privateKey,
    adminAddress: devAccounts[DEV_ACCOUNT.admin].address,
    serviceAddress: service ?? devAccounts[DEV_ACCOUNT.service].address,
    arbiterAddress: arbiter ?? devAccounts[DEV_ACCOUNT.arbiter].address,
    treasuryAddress: devAccounts[DEV_ACCOUNT.treasury].address,
    ...rest,
  });
}
