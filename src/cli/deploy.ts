// `npm run deploy`: compiles, then deploys the escrow (and a TestUSDC unless USDC_ADDRESS is set) to
// RPC_URL and writes DEPLOYMENT_FILE (default .data/deployment.json).
//
// Environment:
//   RPC_URL               JSON-RPC endpoint (required)
//   DEPLOYER_PRIVATE_KEY  pays for the deployment; holds no role afterwards
//   ADMIN_ADDRESS         gets DEFAULT_ADMIN_ROLE (a multisig in production): pause, roles, allow-list,
//                         treasury, stray-token recovery
//   SERVICE_PRIVATE_KEY   its address gets SERVICE_ROLE
//   ARBITER_PRIVATE_KEY   its address gets ARBITER_ROLE
//   TREASURY_ADDRESS      is credited the service's share of partner fees
//   REFUND_GRACE_SECONDS  the escrow's refund grace period (decisions 19); default 3600
//   USDC_ADDRESS          optional existing token; otherwise TestUSDC is deployed (sandbox)
//   DEPLOYMENT_FILE       output path
// On a local chain (chain id 31337, the sandbox) any missing key or address falls back to the Hardhat
// development accounts of src/stack/local-node.ts (deployer 0, service 1, arbiter 2, treasury 3,
// admin 10). On any other chain every variable but USDC_ADDRESS, REFUND_GRACE_SECONDS and
// DEPLOYMENT_FILE is required, and the deployer, admin, service and arbiter must be four different
// addresses (decisions 19).
import { createPublicClient, getAddress, isAddress, isHex } from "viem";
import { chainTransport } from "../chain/rpc-transport.ts";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { DEFAULT_REFUND_GRACE_SECONDS, compileContracts, deployContracts } from "../stack/deploy.ts";
import { DEV_ACCOUNT, devAccounts } from "../stack/local-node.ts";
import { LOCAL_CHAIN_ID } from "../config.ts";

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

function privateKey(name: string, value: string | undefined): Hex | undefined {
  if (value === undefined) return undefined;
  const key = value.startsWith("0x") ? value : `0x${value}`;
  if (!isHex(key) || key.length !== 66) throw new Error(`${name} is not a 32-byte hex private key`);
  return key;
}

function address(name: string, value: string | undefined): Address | undefined {
  if (value === undefined) return undefined;
  if (!isAddress(value, { strict: false })) throw new Error(`${name} is not an address`);
  return getAddress(value);
}

export interface DeployPlan {
  deployerPrivateKey: Hex;
  adminAddress: Address;
  serviceAddress: Address;
  arbiterAddress: Address;
  treasuryAddress: Address;
  refundGraceSeconds: number;
  usdcAddress?: Address;
}

/**
 * What `npm run deploy` deploys on chain `chainId`, from the environment: the development accounts fill
 * in on the local chain only; elsewhere missing variables and shared keys are refused, naming the
 * variables.
 */
export function deployPlanFromEnv(env: Env, chainId: number): DeployPlan {
  const local = chainId === LOCAL_CHAIN_ID;
  let deployerKey = privateKey("DEPLOYER_PRIVATE_KEY", read(env, "DEPLOYER_PRIVATE_KEY"));
  const serviceKey = privateKey("SERVICE_PRIVATE_KEY", read(env, "SERVICE_PRIVATE_KEY"));
  const arbiterKey = privateKey("ARBITER_PRIVATE_KEY", read(env, "ARBITER_PRIVATE_KEY"));
  let admin = address("ADMIN_ADDRESS", read(env, "ADMIN_ADDRESS"));
  let treasury = address("TREASURY_ADDRESS", read(env, "TREASURY_ADDRESS"));
  let service = serviceKey === undefined ? undefined : privateKeyToAccount(serviceKey).address;
  let arbiter = arbiterKey === undefined ? undefined : privateKeyToAccount(arbiterKey).address;

  if (local) {
    deployerKey ??= devAccounts[DEV_ACCOUNT.deployer].privateKey;
    admin ??= devAccounts[DEV_ACCOUNT.admin].address;
    service ??= devAccounts[DEV_ACCOUNT.service].address;
    arbiter ??= devAccounts[DEV_ACCOUNT.arbiter].address;
    treasury ??= devAccounts[DEV_ACCOUNT.treasury].address;
  }
  const missing = [
    deployerKey === undefined && "DEPLOYER_PRIVATE_KEY",
    admin === undefined && "ADMIN_ADDRESS",
    service === undefined && "SERVICE_PRIVATE_KEY",
    arbiter === undefined && "ARBITER_PRIVATE_KEY",
    treasury === undefined && "TREASURY_ADDRESS",
  ].filter((name) => name !== false);
  if (deployerKey === undefined || admin === undefined || service === undefined || arbiter === undefined || treasury === undefined) {
    throw new Error(`missing environment for chain ${chainId}: ${missing.join(", ")}`);
  }

  if (!local) {
    const roles: [string, Address][] = [
      ["DEPLOYER_PRIVATE_KEY", privateKeyToAccount(deployerKey).address],
      ["ADMIN_ADDRESS", admin],
      ["SERVICE_PRIVATE_KEY", service],
      ["ARBITER_PRIVATE_KEY", arbiter],
    ];
    const clashes: string[] = [];
    for (const [i, [nameA, a]] of roles.entries()) {
      for (const [nameB, b] of roles.slice(i + 1)) if (a === b) clashes.push(`${nameA} and ${nameB} are the same address ${a}`);
    }
    if (clashes.length > 0) {
      throw new Error(`the deployer, admin, service and arbiter must be four different addresses outside the sandbox: ${clashes.join("; ")}`);
    }
  }

  const graceText = read(env, "REFUND_GRACE_SECONDS");
  const refundGraceSeconds = graceText === undefined ? DEFAULT_REFUND_GRACE_SECONDS : Number(graceText);
  if (!/^\d+$/.test(graceText ?? "0") || !Number.isSafeInteger(refundGraceSeconds)) {
    throw new Error(`REFUND_GRACE_SECONDS is not a whole number of seconds: ${graceText}`);
  }

  const usdcAddress = address("USDC_ADDRESS", read(env, "USDC_ADDRESS"));
  return {
    deployerPrivateKey: deployerKey,
    adminAddress: admin,
    serviceAddress: service,
    arbiterAddress: arbiter,
    treasuryAddress: treasury,
    refundGraceSeconds,
    ...(usdcAddress === undefined ? {} : { usdcAddress }),
  };
}

async function main(): Promise<void> {
  const rpcUrl = read(process.env, "RPC_URL");
  if (rpcUrl === undefined) throw new Error("RPC_URL is required");
  const chainId = await createPublicClient({ transport: chainTransport(rpcUrl) }).getChainId();
  const plan = deployPlanFromEnv(process.env, chainId);

  const deploymentFile = read(process.env, "DEPLOYMENT_FILE") ?? ".data/deployment.json";
  await compileContracts();
  const deployment = await deployContracts({ rpcUrl, ...plan, deploymentFile, log: (message) => console.log(message) });
  console.log(`admin ${plan.adminAddress}, refund grace ${plan.refundGraceSeconds} s; the deployer holds no role`);
  console.log(`wrote ${deploymentFile}`);
  console.log(JSON.stringify(deployment, null, 2));
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(`deploy failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
