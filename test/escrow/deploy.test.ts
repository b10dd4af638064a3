// End to end: a real `hardhat node` child process (startLocalChain), deployContracts over HTTP with
// viem only, the deployment file, and the `npm run deploy` CLI.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { createPublicClient, getAddress, http } from "viem";
import type { Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ARBITER_ROLE, DEFAULT_ADMIN_ROLE, SERVICE_ROLE, deployContracts, readDeployment } from "../../src/stack/deploy.ts";
import { deployPlanFromEnv } from "../../src/cli/deploy.ts";
import type { Deployment } from "../../src/stack/deploy.ts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { DEV_ACCOUNT, devAccounts, sandboxAccounts, startLocalChain } from "../../src/stack/local-node.ts";
import type { LocalChain } from "../../src/stack/local-node.ts";

const deployer = devAccounts[DEV_ACCOUNT.deployer];
const service = devAccounts[DEV_ACCOUNT.service];
const arbiter = devAccounts[DEV_ACCOUNT.arbiter];
const treasury = devAccounts[DEV_ACCOUNT.treasury];
const admin = devAccounts[DEV_ACCOUNT.admin];

describe("local chain and deployment", () => {
  let chain: LocalChain;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "offramp-deploy-"));
    chain = await startLocalChain({ port: 0 });
  });

  after(async () => {
    await chain?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const client = () => createPublicClient({ transport: http(chain.rpcUrl) });

  async function assertDeployed(deployment: Deployment, refundGraceSeconds = 3600n) {
    const publicClient = client();
    const read = <T>(functionName: string, args: readonly unknown[]) =>
      publicClient.readContract({ address: deployment.escrowAddress, abi: escrowAbi, functionName, args } as never) as Promise<T>;
    // The admin holds DEFAULT_ADMIN_ROLE; the deployer holds nothing (decisions 19).
    assert.equal(await read("hasRole", [DEFAULT_ADMIN_ROLE, admin.address]), true);
    for (const role of [DEFAULT_ADMIN_ROLE, SERVICE_ROLE, ARBITER_ROLE]) {
      assert.equal(await read("hasRole", [role, deployer.address]), false, `deployer holds ${role}`);
    }
    assert.equal(await read("hasRole", [SERVICE_ROLE, service.address]), true);
    assert.equal(await read("hasRole", [ARBITER_ROLE, arbiter.address]), true);
    assert.equal(await read("hasRole", [DEFAULT_ADMIN_ROLE, service.address]), false);
    assert.equal(await read("REFUND_GRACE_SECONDS", []), refundGraceSeconds);
    assert.equal(await read("tokenAllowed", [deployment.usdcAddress]), true);
    assert.equal(getAddress(await read<Address>("treasury", [])), getAddress(treasury.address));
    // The escrow appears exactly at deploymentBlock.
    assert.notEqual(await publicClient.getCode({ address: deployment.escrowAddress, blockNumber: BigInt(deployment.deploymentBlock) }), undefined);
    assert.equal(await publicClient.getCode({ address: deployment.escrowAddress, blockNumber: BigInt(deployment.deploymentBlock - 1) }), undefined);
  }

  it("startLocalChain answers JSON-RPC on chain 31337 with the dev accounts, in their documented order", async () => {
    assert.equal(chain.chainId, 31337);
    assert.match(chain.rpcUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    const publicClient = client();
    assert.equal(await publicClient.getChainId(), 31337);
    const accounts = (await publicClient.request({ method: "eth_accounts" } as never)) as string[];
    for (const account of devAccounts) {
      assert.equal(getAddress(privateKeyToAccount(account.privateKey).address), account.address, `key of account ${account.index}`);
      assert.equal(getAddress(accounts[account.index] ?? "0x"), account.address, `account ${account.index} of the node`);
    }
    assert.deepEqual(
      devAccounts.map((a) => a.role),
      ["deployer", "service", "arbiter", "treasury", ...sandboxAccounts.map(() => "sandbox"), "admin"],
    );
    assert.deepEqual(sandboxAccounts.map((a) => a.index), [4, 5, 6, 7, 8, 9]);
    assert.equal(admin.index, 10);
  });

  it("deployContracts deploys TestUSDC and the escrow, grants roles, allow-lists USDC and writes the file", async () => {
    const file = path.join(dir, "nested", "deployment.json");
    const startedAt = Date.now();
    const deployment = await deployContracts({
      rpcUrl: chain.rpcUrl,
      deployerPrivateKey: deployer.privateKey,
      adminAddress: admin.address,
      serviceAddress: service.address,
      arbiterAddress: arbiter.address,
      treasuryAddress: treasury.address,
      deploymentFile: file,
    });
    assert.equal(deployment.chainId, 31337);
    assert.ok(Date.parse(deployment.deployedAt) >= startedAt - 1000);
    assert.deepEqual(await readDeployment(file), deployment);
    assert.deepEqual(Object.keys(JSON.parse(await readFile(file, "utf8")) as object).sort(), [
      "chainId",
      "deployedAt",
      "deploymentBlock",
      "escrowAddress",
      "usdcAddress",
    ]);
    await assertDeployed(deployment);
    const decimals = await client().readContract({ address: deployment.usdcAddress, abi: testUsdcAbi, functionName: "decimals" });
    assert.equal(decimals, 6);

    // With USDC_ADDRESS given, the existing token is reused and no TestUSDC is deployed.
    const nonceBefore = await client().getTransactionCount({ address: deployer.address });
    const second = await deployContracts({
      rpcUrl: chain.rpcUrl,
      deployerPrivateKey: deployer.privateKey,
      adminAddress: admin.address,
      serviceAddress: service.address,
      arbiterAddress: arbiter.address,
      treasuryAddress: treasury.address,
      usdcAddress: deployment.usdcAddress,
      refundGraceSeconds: 600,
    });
    assert.equal(second.usdcAddress, deployment.usdcAddress);
    assert.notEqual(second.escrowAddress, deployment.escrowAddress);
    // deploy, grant SERVICE_ROLE, grant ARBITER_ROLE, allow-list, grant DEFAULT_ADMIN_ROLE, renounce it.
    assert.equal((await client().getTransactionCount({ address: deployer.address })) - nonceBefore, 6);
    await assertDeployed(second, 600n);
  });

  it("deployContracts refuses a USDC address without code, zero role addresses, a deployer that would keep a role, a bad grace", async () => {
    const base = {
      rpcUrl: chain.rpcUrl,
      deployerPrivateKey: deployer.privateKey,
      adminAddress: admin.address as Address,
      serviceAddress: service.address as Address,
      arbiterAddress: arbiter.address as Address,
      treasuryAddress: treasury.address as Address,
    };
    await assert.rejects(deployContracts({ ...base, usdcAddress: sandboxAccounts[0]?.address }), /has no contract code/);
    await assert.rejects(deployContracts({ ...base, serviceAddress: "0x0000000000000000000000000000000000000000" }), /serviceAddress/);
    await assert.rejects(deployContracts({ ...base, treasuryAddress: "0x1234" as Address }), /treasuryAddress/);
    await assert.rejects(deployContracts({ ...base, adminAddress: "0x0000000000000000000000000000000000000000" }), /adminAddress/);
    for (const name of ["adminAddress", "serviceAddress", "arbiterAddress"] as const) {
      await assert.rejects(deployContracts({ ...base, [name]: deployer.address }), new RegExp(`${name} is the deployer's address`));
    }
    for (const refundGraceSeconds of [-1, 1.5, 30 * 86_400 + 1]) {
      await assert.rejects(deployContracts({ ...base, refundGraceSeconds }), /refundGraceSeconds/);
    }
  });

  it("readDeployment rejects a malformed file", async () => {
    const file = path.join(dir, "bad.json");
    await writeFile(file, JSON.stringify({ chainId: 31337, escrowAddress: "0x12", usdcAddress: deployer.address, deploymentBlock: 1, deployedAt: "x" }));
    await assert.rejects(readDeployment(file), /not a valid deployment file/);
  });

  it("the deploy CLI (npm run deploy) deploys with the dev accounts on a local chain", async () => {
    const file = path.join(dir, "cli", "deployment.json");
    const cli = path.resolve(import.meta.dirname, "../../src/cli/deploy.ts");
    const env: NodeJS.ProcessEnv = { ...process.env, RPC_URL: chain.rpcUrl, DEPLOYMENT_FILE: file };
    for (const name of ["DEPLOYER_PRIVATE_KEY", "ADMIN_ADDRESS", "SERVICE_PRIVATE_KEY", "ARBITER_PRIVATE_KEY", "TREASURY_ADDRESS", "REFUND_GRACE_SECONDS", "USDC_ADDRESS"]) {
      delete env[name];
    }
    const { stdout } = await promisify(execFile)(process.execPath, [cli], { env });
    assert.match(stdout, /OfframpEscrow deployed at 0x[0-9a-fA-F]{40}/);
    await assertDeployed(await readDeployment(file));
  });

  it("outside the sandbox the deploy requires ADMIN_ADDRESS and four different deployer, admin, service and arbiter addresses", () => {
    const key = (index: number) => devAccounts[index]!.privateKey;
    const env = {
      DEPLOYER_PRIVATE_KEY: key(0),
      ADMIN_ADDRESS: admin.address,
      SERVICE_PRIVATE_KEY: key(1),
      ARBITER_PRIVATE_KEY: key(2),
      TREASURY_ADDRESS: treasury.address,
    };
    assert.deepEqual(deployPlanFromEnv(env, 8453), {
      deployerPrivateKey: deployer.privateKey,
      adminAddress: admin.address,
      serviceAddress: service.address,
      arbiterAddress: arbiter.address,
      treasuryAddress: treasury.address,
      refundGraceSeconds: 3600,
    });
    assert.equal(deployPlanFromEnv({ ...env, REFUND_GRACE_SECONDS: "900" }, 8453).refundGraceSeconds, 900);
    assert.throws(() => deployPlanFromEnv({ ...env, REFUND_GRACE_SECONDS: "1h" }, 8453), /REFUND_GRACE_SECONDS/);
    assert.throws(() => deployPlanFromEnv({ ...env, ADMIN_ADDRESS: undefined }, 8453), /missing environment for chain 8453: ADMIN_ADDRESS$/);
    assert.throws(() => deployPlanFromEnv({ ...env, DEPLOYER_PRIVATE_KEY: undefined }, 8453), /DEPLOYER_PRIVATE_KEY/);
    assert.throws(
      () => deployPlanFromEnv({ ...env, DEPLOYER_PRIVATE_KEY: key(1) }, 8453),
      /four different addresses.*DEPLOYER_PRIVATE_KEY and SERVICE_PRIVATE_KEY are the same address/,
    );
    assert.throws(() => deployPlanFromEnv({ ...env, ADMIN_ADDRESS: arbiter.address }, 8453), /ADMIN_ADDRESS and ARBITER_PRIVATE_KEY are the same address/);
    assert.throws(() => deployPlanFromEnv({ ...env, ADMIN_ADDRESS: deployer.address.toLowerCase() }, 8453), /DEPLOYER_PRIVATE_KEY and ADMIN_ADDRESS/);
    assert.throws(() => deployPlanFromEnv({ ...env, ARBITER_PRIVATE_KEY: key(1) }, 8453), /SERVICE_PRIVATE_KEY and ARBITER_PRIVATE_KEY/);
    // On the local chain (sandbox) the development accounts fill in, admin account 10 included.
    assert.deepEqual(deployPlanFromEnv({}, 31337), {
      deployerPrivateKey: deployer.privateKey,
      adminAddress: admin.address,
      serviceAddress: service.address,
      arbiterAddress: arbiter.address,
      treasuryAddress: treasury.address,
      refundGraceSeconds: 3600,
    });
  });

  it("startLocalChain fails clearly when the port is taken, and stop() ends the process", async () => {
    const port = Number(new URL(chain.rpcUrl).port);
    await assert.rejects(startLocalChain({ port, startTimeoutMs: 30_000 }), /hardhat node exited early/);
    const other = await startLocalChain({ port: 0 });
    await other.stop();
    assert.throws(() => process.kill(other.pid, 0), /ESRCH/);
    await other.stop(); // idempotent
  });
});
