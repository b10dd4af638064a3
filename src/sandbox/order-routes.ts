import { BaseError, ContractFunctionRevertedError, encodeFunctionData, maxUint256, type Hex } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../chain/escrow-abi.ts";
import type { EscrowGateway } from "../chain/escrow-gateway.ts";
import { SANCTIONED_SANDBOX_WALLET, sandboxAccounts } from "../stack/local-node.ts";
import { sendFromWallet, waitUntilMined, type WalletCall } from "../chain/wallet-sends.ts";
import type { Pool } from "../db/pool.ts";
import { InvalidStateError, ValidationError } from "../domain/errors.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import type { OrderStatus } from "../orders/machine.ts";
import { getOrderRow, type OrderRow } from "../orders/queries.ts";
import { contractTerms, signedTermsOf } from "../orders/terms.ts";
import type { PermitIssuer } from "../market/permits.ts";

/** The answer of a sandbox chain action: its transaction, and the wallet that sent it. */
function txAnswer(wallet?: "sellerWallet" | "buyerWallet") {
  const properties: Record<string, unknown> = { txHash: { type: "string", pattern: "^0x[0-9a-fA-F]{64}$" } };
  if (wallet) properties[wallet] = { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" };
  return { type: "object", required: Object.keys(properties), properties };
}

// Sandbox test helpers (decisions section 13): each sends a real transaction from a sandbox wallet and
// waits for it to be mined; the order itself changes state only when the indexer reports the event,
// exactly as in production. They may be called for many orders at once (decisions section 13): every
// send goes through sendFromWallet, which gives each wallet's transactions distinct nonces across
// requests and instances.

/** The default seller is the first sandbox wallet, the default buyer the second. */
const SELLER_INDEX = 0;
const DEFAULT_BUYER_INDEX = 1;

function requireStatus(row: OrderRow, ...allowed: OrderStatus[]): void {
  if (!allowed.includes(row.status)) throw new InvalidStateError(`The order is ${row.status}; this action needs ${allowed.join(" or ")}`);
}

function sandboxWallet(index: number) {
  const account = sandboxAccounts[index];
  if (!account) throw new ValidationError(`Sandbox wallets are numbered 0 to ${sandboxAccounts.length - 1}`);
  return privateKeyToAccount(account.privateKey);
}

function sandboxWalletOf(address: string | null) {
  const account = sandboxAccounts.find((candidate) => address !== null && candidate.address.toLowerCase() === address.toLowerCase());
  if (!account) throw new InvalidStateError("That party's wallet is not a sandbox wallet");
  return privateKeyToAccount(account.privateKey);
}

export function sandboxOrderRoutes(
  api: RouteGroup,
  deps: { pool: Pool; gateway: EscrowGateway; issuePermit: PermitIssuer; listingWindowSeconds: number; lockWindowSeconds: number },
): void {
  const { pool, gateway } = deps;
  const escrow = gateway.settings.escrowAddress;
  /** Sends from a sandbox wallet (its turn among concurrent requests) and waits for it to be mined. */
  const send = async (account: PrivateKeyAccount, call: WalletCall): Promise<Hex> => {
    try {
      return await waitUntilMined(gateway, await sendFromWallet({ pool, gateway }, account, call));
    } catch (error) {
      // A revert at gas estimation: another request moved the escrow first (the chain said no).
      if (!(error instanceof BaseError)) throw error;
      const revert = error.walk((e) => e instanceof ContractFunctionRevertedError) as BaseError | null;
      if (!revert && !/revert/i.test(error.message)) throw error;
      throw new InvalidStateError(`The transaction would revert on chain: ${(revert ?? error).shortMessage}`);
    }
  };

  api.add<{ sellerWallet?: number }>(
    {
      method: "post",
      path: "/sandbox/orders/:id/deposit",
      tag: "Sandbox",
      summary: "The seller's sandbox wallet (minted test USDC as needed) deposits the order's USDC into the escrow",
      description: `Optional \`sellerWallet\`: the index of the sandbox wallet that deposits (default 0); wallet ${SANCTIONED_SANDBOX_WALLET} is on the sandbox sanctions list.`,
      body: { type: "object", additionalProperties: false, properties: { sellerWallet: { type: "integer", minimum: 0, maximum: sandboxAccounts.length - 1 } } },
      responses: { 200: { description: "{ txHash, sellerWallet }", schema: txAnswer("sellerWallet") } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "CHAIN_UNAVAILABLE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, currentPartner(ctx).id, params.id!);
      requireStatus(row, "PENDING_DEPOSIT");
      const seller = sandboxWallet(body.sellerWallet ?? SELLER_INDEX);
      const token = gateway.settings.usdcAddress;
      const amount = BigInt(row.amount_raw);
      // Safe when many deposits of one wallet run at once: each mints the USDC it deposits (a balance read
      // first would let two deposits count the same tokens), and the escrow's allowance is unlimited
      // (an `approve(amount)` would overwrite another deposit's before it is spent).
      await send(seller, { to: token, data: encodeFunctionData({ abi: testUsdcAbi, functionName: "mint", args: [seller.address, amount] }) });
      const allowance = await gateway.publicClient.readContract({ address: token, abi: testUsdcAbi, functionName: "allowance", args: [seller.address, escrow] });
      if (allowance < amount) await send(seller, { to: token, data: encodeFunctionData({ abi: testUsdcAbi, functionName: "approve", args: [escrow, maxUint256] }) });
      // The terms the order was signed with (src/orders/terms.ts), not today's configuration.
      const terms = contractTerms(signedTermsOf(row, { tokenAddress: token, listingWindowSeconds: deps.listingWindowSeconds, lockWindowSeconds: deps.lockWindowSeconds }));
      const txHash = await send(seller, { to: escrow, data: encodeFunctionData({ abi: escrowAbi, functionName: "deposit", args: [terms, row.deposit_signature as Hex] }) });
      ctx.body = { txHash, sellerWallet: seller.address };
    },
  );

  api.add<{ buyerWallet?: number }>(
    {
      method: "post",
      path: "/sandbox/orders/:id/lock",
      tag: "Sandbox",
      summary: "A sandbox buyer wallet locks the order",
      body: { type: "object", additionalProperties: false, properties: { buyerWallet: { type: "integer", minimum: 0, maximum: sandboxAccounts.length - 1 } } },
      responses: { 200: { description: "{ txHash, buyerWallet }", schema: txAnswer("buyerWallet") } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "ORDER_NOT_AVAILABLE", "BUYER_SUSPENDED", "KYC_REQUIRED", "LOCK_LIMIT_REACHED", "CHAIN_UNAVAILABLE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, currentPartner(ctx).id, params.id!);
      requireStatus(row, "ACTIVE");
      const buyer = sandboxWallet(body.buyerWallet ?? DEFAULT_BUYER_INDEX);
      if (buyer.address.toLowerCase() === row.seller_wallet?.toLowerCase()) throw new ValidationError("The seller cannot lock its own order");
      // The buyer locks with a permit from the market's own issuance (decisions 13): the same checks, the
      // sandbox wallets being KYC-approved and exempt from the lock limits.
      const { forContract, signature } = await deps.issuePermit(buyer.address, row.escrow_order_id, { sandboxHelper: true });
      const txHash = await send(buyer, { to: escrow, data: encodeFunctionData({ abi: escrowAbi, functionName: "lock", args: [forContract, signature] }) });
      ctx.body = { txHash, buyerWallet: buyer.address };
    },
  );

  api.add<{ by: "BUYER" | "SELLER" }>(
    {
      method: "post",
      path: "/sandbox/orders/:id/dispute",
      tag: "Sandbox",
      summary: "The buyer or the seller opens a dispute on chain",
      body: { type: "object", additionalProperties: false, required: ["by"], properties: { by: { enum: ["BUYER", "SELLER"] } } },
      responses: { 200: { description: "{ txHash }", schema: txAnswer() } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE", "CHAIN_UNAVAILABLE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, currentPartner(ctx).id, params.id!);
      requireStatus(row, "LOCKED");
      const party = sandboxWalletOf(body.by === "BUYER" ? row.buyer_wallet : row.seller_wallet);
      const txHash = await send(party, { to: escrow, data: encodeFunctionData({ abi: escrowAbi, functionName: "openDispute", args: [row.escrow_order_id as Hex] }) });
      ctx.body = { txHash };
    },
  );
}
