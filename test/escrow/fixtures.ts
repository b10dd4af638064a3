// Shared set-up for the escrow tests (loaded by the node:test runner too, but defines no tests).
import assert from "node:assert/strict";
import { network } from "hardhat";
import {
  BaseError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  getAddress,
  keccak256,
  parseAbi,
  parseEventLogs,
  toHex,
  zeroAddress,
} from "viem";
import type {
  Abi,
  Address,
  ContractFunctionArgs,
  ContractFunctionName,
  ContractFunctionReturnType,
  Hash,
  Hex,
  TransactionReceipt,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ARBITER_ROLE, SERVICE_ROLE, readArtifact } from "../../src/stack/deploy.ts";
import { escrowAbi, escrowEip712Domain, lockPermitTypes, orderTermsTypes, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { DEV_ACCOUNT, devAccounts } from "../../src/stack/local-node.ts";
import type { LockPermit, OrderTerms } from "../../src/chain/escrow-gateway.ts";

export const DAY = 86_400n;
export const USDC = 1_000_000n; // 1 USDC in token units
/** The fixture escrow's REFUND_GRACE_SECONDS (the deploy default). */
export const GRACE = 3600n;

/** Minimal ABIs of the test-only tokens under contracts/test. */
export const mockTokenAbi = parseAbi([
  "function mint(address to, uint256 amount)",
  "function approve(address spender, uint256 amount) returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
  "function arm(address target, bytes data)",
  "function disarm()",
  "function setBlacklisted(address account, bool blocked)",
  "error Blacklisted(address account)",
  "error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)",
  "error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)",
]);

/** Every error any call in the tests can revert with, for decoding raw revert data. */
const knownErrorsAbi = [...escrowAbi, ...testUsdcAbi, ...mockTokenAbi].filter((item) => item.type === "error") as Abi;

type EscrowWrite = ContractFunctionName<typeof escrowAbi, "nonpayable">;
type EscrowArgs<F extends EscrowWrite> = ContractFunctionArgs<typeof escrowAbi, "nonpayable", F>;
type EscrowRead = ContractFunctionName<typeof escrowAbi, "view" | "pure">;
type EscrowReadArgs<F extends EscrowRead> = ContractFunctionArgs<typeof escrowAbi, "view" | "pure", F>;
type EscrowReadResult<F extends EscrowRead> = ContractFunctionReturnType<typeof escrowAbi, "view" | "pure", F>;

/** The escrow's decoded events in a receipt, in log order. */
export function escrowEvents(receipt: TransactionReceipt, escrow: Address) {
  return parseEventLogs({ abi: escrowAbi, logs: receipt.logs.filter((log) => getAddress(log.address) === escrow) });
}

export type { LockPermit, OrderTerms };

export type Fixture = Awaited<ReturnType<typeof deployFixture>>;

let orderCounter = 0;
/** A fresh, unique order id. */
export function newOrderId(label = "order"): Hex {
  orderCounter += 1;
  return keccak256(toHex(`${label}-${orderCounter}-${process.pid}`));
}

/**
 * Connects to a fresh in-process Hardhat network and deploys TestUSDC and OfframpEscrow with the same
 * account layout as the sandbox: 1 service, 2 arbiter, 3 treasury, 4..9 sellers and buyers, 10 admin
 * (which deploys here, to keep the set-up short; src/stack/deploy.ts deploys from account 0).
 */
export async function deployFixture() {
  const connection = await network.create();
  const { viem } = connection;
  const publicClient = await viem.getPublicClient();
  const testClient = await viem.getTestClient();
  const wallets = await viem.getWalletClients();
  const wallet = (index: number) => {
    const client = wallets[index];
    if (client === undefined) throw new Error(`no wallet ${index}`);
    return client;
  };
  const admin = wallet(DEV_ACCOUNT.admin);
  const service = wallet(1);
  const arbiter = wallet(2);
  const treasury = getAddress(wallet(3).account.address);
  const seller = wallet(4);
  const buyer = wallet(5);
  const stranger = wallet(6);
  const partner = getAddress(wallet(7).account.address);
  for (const [i, account] of devAccounts.entries()) {
    assert.equal(getAddress(wallet(i).account.address), getAddress(account.address), "hardhat accounts are the dev accounts");
  }
  const serviceSigner = privateKeyToAccount(devAccounts[1].privateKey);
  type Wallet = (typeof wallets)[number];

  /** Sends a transaction (automine) and returns its successful receipt. */
  const mined = async (hash: Promise<Hash>): Promise<TransactionReceipt> => {
    const receipt = await publicClient.getTransactionReceipt({ hash: await hash });
    assert.equal(receipt.status, "success");
    return receipt;
  };

  const deploy = async (contract: "OfframpEscrow" | "TestUSDC", args: readonly unknown[]): Promise<Address> => {
    const { abi, bytecode } = await readArtifact(contract);
    const receipt = await mined(admin.deployContract({ abi, bytecode, args }));
    assert.ok(receipt.contractAddress);
    return getAddress(receipt.contractAddress);
  };

  const usdc = await deploy("TestUSDC", []);
  const escrow = await deploy("OfframpEscrow", [admin.account.address, treasury, GRACE]);
  await mined(admin.writeContract({ address: escrow, abi: escrowAbi, functionName: "grantRole", args: [SERVICE_ROLE, service.account.address] }));
  await mined(admin.writeContract({ address: escrow, abi: escrowAbi, functionName: "grantRole", args: [ARBITER_ROLE, arbiter.account.address] }));
  await mined(admin.writeContract({ address: escrow, abi: escrowAbi, functionName: "setTokenAllowed", args: [usdc, true] }));

  /** Sends an escrow transaction as `from`; returns the hash promise (for expectRevert). */
  const send = <F extends EscrowWrite>(from: Wallet, functionName: F, args: EscrowArgs<F>): Promise<Hash> =>
    from.writeContract({ address: escrow, abi: escrowAbi, functionName, args } as never);
  /** Sends an escrow transaction as `from` and returns its successful receipt. */
  const tx = <F extends EscrowWrite>(from: Wallet, functionName: F, args: EscrowArgs<F>) =>
    mined(send(from, functionName, args));
  /** A read-only escrow call. */
  const read = <F extends EscrowRead>(functionName: F, args: EscrowReadArgs<F>) =>
    publicClient.readContract({ address: escrow, abi: escrowAbi, functionName, args } as never) as Promise<
      EscrowReadResult<F>
    >;

  const now = async (): Promise<bigint> => (await publicClient.getBlock()).timestamp;
  /** Makes the next block's timestamp `seconds` after the latest one. */
  const advance = async (seconds: bigint) => {
    await testClient.setNextBlockTimestamp({ timestamp: (await now()) + seconds });
  };
  /** Advances time and mines a block, so views see the new time. */
  const travel = async (seconds: bigint) => {
    await advance(seconds);
    await testClient.mine({ blocks: 1 });
  };

  const balanceOf = (account: Address, token: Address = usdc) =>
    publicClient.readContract({ address: token, abi: testUsdcAbi, functionName: "balanceOf", args: [account] });

  const getOrder = (orderId: Hex) =>
    publicClient.readContract({ address: escrow, abi: escrowAbi, functionName: "getOrder", args: [orderId] });

  const domain = { ...escrowEip712Domain, chainId: await publicClient.getChainId(), verifyingContract: escrow } as const;

  /** Terms with sensible defaults (100 USDC, 1 % partner fee, 30 % treasury share, 1 day windows). */
  const makeTerms = async (overrides: Partial<OrderTerms> = {}): Promise<OrderTerms> => ({
    orderId: newOrderId(),
    token: usdc,
    amount: 100n * USDC,
    feeBps: 100,
    feeRecipient: partner,
    treasuryShareBps: 3000,
    depositDeadline: (await now()) + 1800n,
    listingWindow: DAY,
    lockWindow: DAY,
    ...overrides,
  });

  /** EIP-712 signature of the terms, by the service key unless another private key is given. */
  const sign = (terms: OrderTerms, privateKey: Hex = devAccounts[1].privateKey, signDomain = domain) =>
    privateKeyToAccount(privateKey).signTypedData({
      domain: signDomain,
      types: orderTermsTypes,
      primaryType: "OrderTerms",
      message: terms,
    });

  /** A lock permit for `buyer` (the fixture's buyer by default), valid 120 s from the latest block. */
  const makePermit = async (orderId: Hex, overrides: Partial<LockPermit> = {}): Promise<LockPermit> => ({
    orderId,
    buyer: getAddress(buyer.account.address),
    deadline: (await now()) + 120n,
    ...overrides,
  });

  /** EIP-712 signature of a lock permit, by the service key unless another private key is given. */
  const signPermit = (permit: LockPermit, privateKey: Hex = devAccounts[1].privateKey, signDomain = domain) =>
    privateKeyToAccount(privateKey).signTypedData({ domain: signDomain, types: lockPermitTypes, primaryType: "LockPermit", message: permit });

  /**
   * `from` locks with a fresh service-signed permit for itself (deadline: 120 s after the latest block
   * unless given); returns the hash promise (for expectRevert).
   */
  const lock = async (from: Wallet, orderId: Hex, deadline?: bigint): Promise<Hash> => {
    const permit = await makePermit(orderId, { buyer: getAddress(from.account.address), ...(deadline === undefined ? {} : { deadline }) });
    return send(from, "lock", [permit, await signPermit(permit)]);
  };

  /** Mints, approves and deposits as `from` (the seller by default); returns the terms and receipt. */
  const deposit = async (
    overrides: Partial<OrderTerms> = {},
    from = seller,
    signature?: Hex,
  ): Promise<{ terms: OrderTerms; receipt: TransactionReceipt }> => {
    const terms = await makeTerms(overrides);
    await fund(from.account.address, terms.amount, terms.token);
    await mined(from.writeContract({ address: terms.token, abi: testUsdcAbi, functionName: "approve", args: [escrow, terms.amount] }));
    const receipt = await mined(
      from.writeContract({ address: escrow, abi: escrowAbi, functionName: "deposit", args: [terms, signature ?? (await sign(terms))] }),
    );
    return { terms, receipt };
  };

  const fund = async (to: Address, amount: bigint, token: Address = usdc) => {
    await mined(admin.writeContract({ address: token, abi: testUsdcAbi, functionName: "mint", args: [to, amount] }));
  };

  /** Deposits and locks as `buyer`; returns the terms. */
  const depositAndLock = async (overrides: Partial<OrderTerms> = {}) => {
    const { terms } = await deposit(overrides);
    await mined(lock(buyer, terms.orderId));
    return terms;
  };

  return {
    connection,
    viem,
    publicClient,
    testClient,
    wallets,
    wallet,
    admin,
    service,
    arbiter,
    treasury,
    seller,
    buyer,
    stranger,
    partner,
    serviceSigner,
    usdc,
    escrow,
    domain,
    mined,
    deploy,
    send,
    tx,
    read,
    now,
    advance,
    travel,
    balanceOf,
    getOrder,
    makeTerms,
    sign,
    makePermit,
    signPermit,
    lock,
    fund,
    deposit,
    depositAndLock,
  };
}

let cached: { fixture: Fixture; snapshot: Hex } | undefined;

/**
 * The deployed fixture in its freshly deployed state: deployed once per process, then restored from
 * an EVM snapshot on every later call (much faster than redeploying for each test).
 */
export async function loadFixture(): Promise<Fixture> {
  if (cached === undefined) {
    const fixture = await deployFixture();
    cached = { fixture, snapshot: await fixture.testClient.snapshot() };
    return fixture;
  }
  const { fixture, snapshot } = cached;
  await fixture.testClient.revert({ id: snapshot });
  cached.snapshot = await fixture.testClient.snapshot();
  return fixture;
}

/** The decoded custom error of a reverted call (escrow, USDC, mock-token or OpenZeppelin errors). */
export function revertError(error: unknown): { errorName: string; args: readonly unknown[] } | undefined {
  if (!(error instanceof BaseError)) return undefined;
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
  if (reverted instanceof ContractFunctionRevertedError) {
    if (reverted.data !== undefined) return { errorName: reverted.data.errorName, args: reverted.data.args ?? [] };
    if (reverted.raw !== undefined) {
      const decoded = decodeErrorResult({ abi: knownErrorsAbi, data: reverted.raw });
      return { errorName: decoded.errorName, args: decoded.args ?? [] };
    }
  }
  const withData = error.walk((e) => typeof (e as { data?: unknown }).data === "string") as { data?: Hex } | null;
  if (withData?.data !== undefined && withData.data.length >= 10) {
    const decoded = decodeErrorResult({ abi: knownErrorsAbi, data: withData.data });
    return { errorName: decoded.errorName, args: decoded.args ?? [] };
  }
  return undefined;
}

/** Asserts that `call` reverts with the custom error `errorName` (and `args`, when given). */
export async function expectRevert(call: Promise<unknown>, errorName: string, args?: readonly unknown[]): Promise<void> {
  let thrown: unknown;
  try {
    await call;
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown !== undefined, `expected a revert with ${errorName}, but the call succeeded`);
  const decoded = revertError(thrown);
  assert.ok(decoded, `expected ${errorName}, got an undecodable error: ${String(thrown)}`);
  assert.equal(decoded.errorName, errorName);
  if (args !== undefined) assert.deepEqual(normalize(decoded.args), normalize(args));
}

/** Deeply checksums every address string, so lower-case and checksummed addresses compare equal. */
export function normalize(value: unknown): unknown {
  if (typeof value === "string" && /^0x[0-9a-fA-F]{40}$/.test(value)) return getAddress(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  }
  return value;
}

/** Asserts an event's name and (address-normalised) arguments. */
export function assertEvent(event: { eventName: string; args: unknown } | undefined, eventName: string, args: Record<string, unknown>): void {
  assert.ok(event, `expected event ${eventName}, got none`);
  assert.equal(event.eventName, eventName);
  assert.deepEqual(normalize(event.args), normalize(args));
}

export { zeroAddress };
