// `npm run deploy`: compiles, then deploys the escrow (and a TestUSDC unless USDC_ADDRESS is set) to
// RPC_URL and writes DEPLOYMENT_FILE (default .data/deployment.json).
//
// Environment:
//   RPC_URL               JSON-RPC endpoint (required)
//   DEPLOYER_PRIVATE_KEY  pays for and administers the deployment; defaults to SERVICE_PRIVATE_KEY
//   SERVICE_PRIVATE_KEY   its address gets SERVICE_ROLE
//   ARBITER_PRIVATE_KEY   its address gets ARBITER_ROLE
//   TREASURY_ADDRESS      receives the service's share of partner fees
//   USDC_ADDRESS          optional existing token; otherwise TestUSDC is deployed (sandbox)
//   DEPLOYMENT_FILE       output path
// On a local chain (chain id 31337) any missing key or address falls back to the Hardhat development
// accounts of src/chain/local-node.ts (deployer 0, service 1, arbiter 2, treasury 3).
import { createPublicClient, http, isAddress, isHex } from "viem";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { compileContracts, deployContracts } from "../chain/deploy.ts";
import { DEV_ACCOUNT, LOCAL_CHAIN_ID, devAccounts } from "../chain/local-node.ts";

function env(name: string): string | undefined {
  const value = process.env[name]?.trim();
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
  return value;
}

async function main(): Promise<void> {
  const rpcUrl = env("RPC_URL");
  if (rpcUrl === undefined) throw new Error("RPC_URL is required");
  const chainId = await createPublicClient({ transport: http(rpcUrl) }).getChainId();
  const local = chainId === LOCAL_CHAIN_ID;

  const serviceKey = privateKey("SERVICE_PRIVATE_KEY", env("SERVICE_PRIVATE_KEY"));
  let deployerKey = privateKey("DEPLOYER_PRIVATE_KEY", env("DEPLOYER_PRIVATE_KEY")) ?? serviceKey;
  const arbiterKey = privateKey("ARBITER_PRIVATE_KEY", env("ARBITER_PRIVATE_KEY"));
  let treasury = address("TREASURY_ADDRESS", env("TREASURY_ADDRESS"));
  let service = serviceKey === undefined ? undefined : privateKeyToAccount(serviceKey).address;
  let arbiter = arbiterKey === undefined ? undefined : privateKeyToAccount(arbiterKey).address;

  if (local) {
    deployerKey ??= devAccounts[DEV_ACCOUNT.deployer].privateKey;
    service ??= devAccounts[DEV_ACCOUNT.service].address;
    arbiter ??= devAccounts[DEV_ACCOUNT.arbiter].address;
    treasury ??= devAccounts[DEV_ACCOUNT.treasury].address;
  }
  const missing = [
    deployerKey === undefined && "DEPLOYER_PRIVATE_KEY (or SERVICE_PRIVATE_KEY)",
    service === undefined && "SERVICE_PRIVATE_KEY",
    arbiter === undefined && "ARBITER_PRIVATE_KEY",
    treasury === undefined && "TREASURY_ADDRESS",
  ].filter((name) => name !== false);
  if (deployerKey === undefined || service === undefined || arbiter === undefined || treasury === undefined) {
    throw new Error(`missing environment for chain ${chainId}: ${missing.join(", ")}`);
  }

  const deploymentFile = env("DEPLOYMENT_FILE") ?? ".data/deployment.json";
  await compileContracts();
  const deployment = await deployContracts({
    rpcUrl,
    deployerPrivateKey: deployerKey,
    serviceAddress: service,
    arbiterAddress: arbiter,
    treasuryAddress: treasury,
    usdcAddress: address("USDC_ADDRESS", env("USDC_ADDRESS")),
    deploymentFile,
    log: (message) => console.log(message),
  });
  console.log(`wrote ${deploymentFile}`);
  console.log(JSON.stringify(deployment, null, 2));
}

main().catch((error: unknown) => {
  console.error(`deploy failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
