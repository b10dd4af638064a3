// Wallets that send escrow transactions straight to the local Hardhat node, the way a seller's or a
// buyer's wallet does: locally signed, with their own nonce counter, no estimate round trips. On the
// Hardhat node under automine eth_sendRawTransaction answers once the transaction is mined, so the moment
// the call returns is the moment the transaction's block exists (checked by `sendMined`); under interval
// mining (`withIntervalMining`) it answers once the transaction is pending. One wallet's
// sends go out one after another (a queue per wallet), so pipelines sharing a wallet never send a
// nonce ahead of the one before it (which automine would hold back instead of mining).
import { randomBytes } from "node:crypto";
import { encodeFunctionData, getAddress, maxUint256, type Address, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import type { LockPermit, OrderTerms } from "../../src/chain/escrow-gateway.ts";
import { localAccount } from "../../src/chain/secp256k1.ts";
import { httpRequest } from "./http.ts";

export interface Rpc {
  url: string;
  call<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** One HTTP request carrying many calls (JSON-RPC batch); results in call order. */
  batch<T = unknown>(calls: { method: string; params: unknown[] }[]): Promise<T[]>;
}

export function rpcClient(url: string): Rpc {
  let id = 0;
  const post = async (body: unknown): Promise<unknown> => {
    const response = await httpRequest(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), timeoutMs: 60_000 });
    return JSON.parse(response.text);
  };
  return {
    url,
    async call<T>(method: string, params: unknown[] = []) {
      id += 1;
      const reply = (await post({ jsonrpc: "2.0", id, method, params })) as { result?: T; error?: { message: string } };
      if (reply.error) throw new Error(`${method}: ${reply.error.message}`);
      return reply.result as T;
    },
    async batch<T>(calls: { method: string; params: unknown[] }[]) {
      const first = id + 1;
      id += calls.length;
      const replies = (await post(calls.map((call, i) => ({ jsonrpc: "2.0", id: first + i, ...call })))) as { id: number; result?: T; error?: { message: string } }[];
      const byId = new Map(replies.map((reply) => [reply.id, reply]));
      return calls.map((call, i) => {
        const reply = byId.get(first + i);
        if (!reply || reply.error) throw new Error(`${call.method}: ${reply?.error?.message ?? "no reply"}`);
        return reply.result as T;
      });
    },
  };
}

export interface FastWallet {
  account: PrivateKeyAccount;
  address: Address;
  /** Signs the next transaction of this wallet (takes its nonce). */
  sign(to: Address, data: Hex, gas: bigint): Promise<Hex>;
  /**
   * Signs and sends after this wallet's earlier sends were answered; resolves with the hash once the
   * node answered (mined, under automine). A failed send re-reads the nonce before the next one goes.
   */
  send(to: Address, data: Hex, gas: bigint): Promise<Hex>;
  /** Re-reads the nonce from the node (after a failed send). */
  resync(): Promise<void>;
}

const MAX_FEE = 50_000_000_000n;
const PRIORITY_FEE = 1_000_000_000n;
export const GAS = { deposit: 400_000n, lock: 200_000n, token: 120_000n } as const;

export async function fastWallet(rpc: Rpc, chainId: number, privateKey: Hex): Promise<FastWallet> {
  // A user's wallet signs on the user's device; here it shares the service's 2 cores, so it signs with
  // libsecp256k1 (the same bytes as viem's, test/chain/signatures.test.ts) at a third of viem's CPU.
  const account = localAccount(privateKey);
  let nonce = Number.parseInt(await rpc.call<string>("eth_getTransactionCount", [account.address, "pending"]), 16);
  let queue: Promise<unknown> = Promise.resolve();
  const wallet: FastWallet = {
    account,
    address: account.address,
    async sign(to, data, gas) {
      const current = nonce;
      nonce += 1;
      return account.signTransaction({ type: "eip1559", chainId, nonce: current, to, data, gas, maxFeePerGas: MAX_FEE, maxPriorityFeePerGas: PRIORITY_FEE });
    },
    send(to, data, gas) {
      const sent = queue.then(async () => {
        const raw = await wallet.sign(to, data, gas);
        try {
          return await rpc.call<Hex>("eth_sendRawTransaction", [raw]);
        } catch (error) {
          await wallet.resync();
          throw error;
        }
      });
      queue = sent.catch(() => undefined);
      return sent;
    },
    async resync() {
      nonce = Number.parseInt(await rpc.call<string>("eth_getTransactionCount", [account.address, "pending"]), 16);
    },
  };
  return wallet;
}

export interface Receipt {
  status: string;
  blockNumber: string;
  logs: unknown[];
}

/**
 * Runs `work` with the node mining a block every `blockMs` (automine off), as an L2's sequencer does, then
 * puts automine back (and mines what is still pending), which the figures outside it rely on.
 */
export async function withIntervalMining<T>(rpc: Rpc, blockMs: number, work: () => Promise<T>): Promise<T> {
  await rpc.call("evm_setAutomine", [false]);
  await rpc.call("evm_setIntervalMining", [blockMs]);
  try {
    return await work();
  } finally {
    await rpc.call("evm_setIntervalMining", [0]);
    await rpc.call("evm_setAutomine", [true]);
    await rpc.call("evm_mine");
  }
}

/** Sends and checks the receipt is already there (automine) and successful; returns the hash. */
export async function sendMined(rpc: Rpc, wallet: FastWallet, to: Address, data: Hex, gas: bigint): Promise<Hex> {
  const hash = await wallet.send(to, data, gas);
  await assertMined(rpc, hash);
  return hash;
}

/** Throws unless the transaction already has a successful receipt. */
export async function assertMined(rpc: Rpc, hash: Hex): Promise<void> {
  const receipt = await rpc.call<Receipt | null>("eth_getTransactionReceipt", [hash]);
  if (!receipt) throw new Error(`transaction ${hash} not mined when eth_sendRawTransaction answered (is automine off?)`);
  if (receipt.status !== "0x1") throw new Error(`transaction ${hash} reverted`);
}

/** A fresh wallet with ETH (hardhat_setBalance), test USDC and an unlimited allowance for the escrow. */
export async function fundedSeller(rpc: Rpc, chainId: number, usdc: Address, escrow: Address, usdcUnits: bigint): Promise<FastWallet> {
  const wallet = await fastWallet(rpc, chainId, `0x${randomBytes(32).toString("hex")}`);
  await rpc.call("hardhat_setBalance", [wallet.address, "0x21e19e0c9bab2400000"]); // 10,000 ETH
  await sendMined(rpc, wallet, usdc, encodeFunctionData({ abi: testUsdcAbi, functionName: "mint", args: [wallet.address, usdcUnits] }), GAS.token);
  await sendMined(rpc, wallet, usdc, encodeFunctionData({ abi: testUsdcAbi, functionName: "approve", args: [escrow, maxUint256] }), GAS.token);
  return wallet;
}

export function depositCall(terms: OrderTerms, signature: Hex): Hex {
  return encodeFunctionData({ abi: escrowAbi, functionName: "deposit", args: [terms, signature] });
}

/** `lock` with the service's permit for the buyer (decisions 17), as the market API hands it out. */
export function lockCall(permit: LockPermit, signature: Hex): Hex {
  return encodeFunctionData({ abi: escrowAbi, functionName: "lock", args: [permit, signature] });
}

/** The `deposit` object of POST /orders, as the contract's OrderTerms. */
export interface ApiDeposit {
  terms: { orderId: string; token: string; amount: string; feeBps: number; feeRecipient: string; treasuryShareBps: number; depositDeadline: string; listingWindow: string; lockWindow: string };
  signature: string;
}

export function termsFromApi(deposit: ApiDeposit): { terms: OrderTerms; signature: Hex } {
  const t = deposit.terms;
  return {
    terms: {
      orderId: t.orderId as Hex,
      token: getAddress(t.token),
      amount: BigInt(t.amount),
      feeBps: t.feeBps,
      feeRecipient: getAddress(t.feeRecipient),
      treasuryShareBps: t.treasuryShareBps,
      depositDeadline: BigInt(t.depositDeadline),
      listingWindow: BigInt(t.listingWindow),
      lockWindow: BigInt(t.lockWindow),
    },
    signature: deposit.signature as Hex,
  };
}

/** Terms for a deposit that is not an API order (raw chain throughput, indexer events). */
export function benchTerms(usdc: Address, amount: bigint): OrderTerms {
  return {
    orderId: `0x${randomBytes(32).toString("hex")}`,
    token: usdc,
    amount,
    feeBps: 0,
    feeRecipient: "0x0000000000000000000000000000000000000000",
    treasuryShareBps: 0,
    depositDeadline: BigInt(Math.floor(Date.now() / 1000) + 30 * 86400),
    listingWindow: 86_400n,
    lockWindow: 86_400n,
  };
}
