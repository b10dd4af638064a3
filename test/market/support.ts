import assert from "node:assert/strict";
import { createWalletClient, http, type Hex, type LocalAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { escrowAbi } from "../../src/chain/escrow-abi.ts";
import type { ApiResponse } from "../support/service.ts";
import { placeOrder, waitForStatus, type TradeStack } from "../support/trade-stack.ts";

// Helpers of the market tests: a buyer's wallet (a fresh key), its sign-in, calls to /market/v1 with its
// token, and the lock its wallet sends with a permit.

export type Json = Record<string, unknown>;

export interface Buyer {
  account: LocalAccount;
  token: string;
}

export function newWallet(): LocalAccount {
  return privateKeyToAccount(generatePrivateKey());
}

export async function market<T = Json>(stack: Pick<TradeStack, "service">, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${stack.service.baseUrl}/market/v1${path}`, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Challenge, personal_sign, session: the buyer's token. */
export async function signIn(stack: Pick<TradeStack, "service">, account: LocalAccount = newWallet()): Promise<Buyer> {
  const challenge = await market<{ message: string }>(stack, "POST", "/auth/challenge", { body: { address: account.address } });
  assert.equal(challenge.status, 201, JSON.stringify(challenge.body));
  const signature = await account.signMessage({ message: challenge.body.message });
  const session = await market<{ token: string }>(stack, "POST", "/auth/session", { body: { message: challenge.body.message, signature } });
  assert.equal(session.status, 201, JSON.stringify(session.body));
  return { account, token: session.body.token };
}

/** Funds a wallet on the local chain through the sandbox faucet. */
export async function fund(stack: TradeStack, address: string, amounts: { eth?: number; usdc?: number } = { usdc: 0 }) {
  const response = await stack.service.api("POST", "/sandbox/faucet", { key: stack.partner.apiKey, body: { address, ...amounts } });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

/** An order deposited by the sandbox seller, seen ACTIVE; returns the partner's detail. */
export async function activeOrder(stack: TradeStack, amountUsdc = 20) {
  const order = await placeOrder(stack, { amountUsdc });
  const deposit = await stack.service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: stack.partner.apiKey });
  assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
  return (await waitForStatus(stack, order.id, "ACTIVE")) as unknown as Json & { id: string; escrowOrderId: string; totalMxn: number; paymentConcept: string };
}

export interface PermitAnswer {
  permit: { orderId: Hex; buyer: Hex; deadline: number };
  signature: Hex;
  escrowAddress: Hex;
  chainId: number;
}

/** The buyer's wallet calls the escrow's lock with the permit; resolves once mined. */
export async function lockWithPermit(stack: TradeStack, account: LocalAccount, answer: PermitAnswer): Promise<Hex> {
  const gateway = stack.service.chain!.gateway;
  const wallet = createWalletClient({ account, chain: gateway.chain, transport: http(stack.chainSettings.rpcUrl) });
  const hash = await wallet.writeContract({
    address: answer.escrowAddress,
    abi: escrowAbi,
    functionName: "lock",
    args: [{ orderId: answer.permit.orderId, buyer: answer.permit.buyer, deadline: BigInt(answer.permit.deadline) }, answer.signature],
  });
  const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, "success");
  return hash;
}

/** KYC through the market's own session and the sandbox decision: the buyer is approved for `level`. */
export async function approveKyc(stack: TradeStack, buyer: Buyer, level: "BASIC" | "FULL" = "BASIC") {
  const session = await market<{ sessionId: string }>(stack, "POST", "/me/kyc", { token: buyer.token, body: { level, returnUrl: "http://localhost/back" } });
  assert.equal(session.status, 201, JSON.stringify(session.body));
  const decided = await market(stack, "POST", `/sandbox/kyc/${session.body.sessionId}/decision`, { token: buyer.token, body: { result: "APPROVED" } });
  assert.equal(decided.status, 200, JSON.stringify(decided.body));
  return decided.body;
}
