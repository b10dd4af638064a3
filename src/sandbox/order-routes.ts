import { getAddress, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { escrowAbi, testUsdcAbi } from "../chain/escrow-abi.ts";
import type { EscrowGateway } from "../chain/escrow-gateway.ts";
import { sandboxAccounts } from "../chain/local-node.ts";
import type { Pool } from "../db/pool.ts";
import { InvalidStateError, ValidationError } from "../domain/errors.ts";
import { currentPartner } from "../http/context.ts";
import type { RouteGroup } from "../http/routes.ts";
import type { OrderStatus } from "../orders/machine.ts";
import { getOrderRow, type OrderRow } from "../orders/queries.ts";

// Sandbox test helpers (decisions section 13): each sends a real transaction from a sandbox wallet and
// waits for it to be mined; the order itself changes state only when the indexer reports the event,
// exactly as in production.

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

export function sandboxOrderRoutes(api: RouteGroup, deps: { pool: Pool; gateway: EscrowGateway; listingWindowSeconds: number; lockWindowSeconds: number }): void {
  const { pool, gateway } = deps;
  const escrow = gateway.settings.escrowAddress;
  const mined = async (hash: Hex) => {
    const receipt = await gateway.publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
    if (receipt.status !== "success") throw new InvalidStateError("The transaction reverted on chain");
    return hash;
  };

  api.add<{ sellerWallet?: number }>(
    {
      method: "post",
      path: "/sandbox/orders/:id/deposit",
      tag: "Sandbox",
      summary: "The seller's sandbox wallet (minted test USDC as needed) deposits the order's USDC into the escrow",
      description: "Optional `sellerWallet`: the index of the sandbox wallet that deposits (default 0); wallet 5 is on the sandbox sanctions list.",
      body: { type: "object", additionalProperties: false, properties: { sellerWallet: { type: "integer", minimum: 0, maximum: sandboxAccounts.length - 1 } } },
      responses: { 200: { description: "{ txHash, sellerWallet }" } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, currentPartner(ctx).id, params.id!);
      requireStatus(row, "PENDING_DEPOSIT");
      const seller = gateway.walletClient(sandboxWallet(body.sellerWallet ?? SELLER_INDEX));
      const token = gateway.settings.usdcAddress;
      const amount = BigInt(row.amount_raw);
      const balance = await gateway.publicClient.readContract({ address: token, abi: testUsdcAbi, functionName: "balanceOf", args: [seller.account.address] });
      if (balance < amount) await mined(await seller.writeContract({ address: token, abi: testUsdcAbi, functionName: "mint", args: [seller.account.address, amount - balance], chain: gateway.chain }));
      await mined(await seller.writeContract({ address: token, abi: testUsdcAbi, functionName: "approve", args: [escrow, amount], chain: gateway.chain }));
      const terms = {
        orderId: row.escrow_order_id as Hex,
        token,
        amount,
        feeBps: row.fee_bps,
        feeRecipient: getAddress(row.fee_recipient_address) as Address,
        treasuryShareBps: row.treasury_share_bps,
        depositDeadline: BigInt(Math.floor(row.deposit_deadline.getTime() / 1000)),
        listingWindow: BigInt(deps.listingWindowSeconds),
        lockWindow: BigInt(deps.lockWindowSeconds),
      };
      const txHash = await mined(
        await seller.writeContract({ address: escrow, abi: escrowAbi, functionName: "deposit", args: [terms, row.deposit_signature as Hex], chain: gateway.chain }),
      );
      ctx.body = { txHash, sellerWallet: seller.account.address };
    },
  );

  api.add<{ buyerWallet?: number }>(
    {
      method: "post",
      path: "/sandbox/orders/:id/lock",
      tag: "Sandbox",
      summary: "A sandbox buyer wallet locks the order",
      body: { type: "object", additionalProperties: false, properties: { buyerWallet: { type: "integer", minimum: 0, maximum: sandboxAccounts.length - 1 } } },
      responses: { 200: { description: "{ txHash, buyerWallet }" } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, currentPartner(ctx).id, params.id!);
      requireStatus(row, "ACTIVE");
      const buyer = gateway.walletClient(sandboxWallet(body.buyerWallet ?? DEFAULT_BUYER_INDEX));
      if (buyer.account.address.toLowerCase() === row.seller_wallet?.toLowerCase()) throw new ValidationError("The seller cannot lock its own order");
      const txHash = await mined(await buyer.writeContract({ address: escrow, abi: escrowAbi, functionName: "lock", args: [row.escrow_order_id as Hex], chain: gateway.chain }));
      ctx.body = { txHash, buyerWallet: buyer.account.address };
    },
  );

  api.add<{ by: "BUYER" | "SELLER" }>(
    {
      method: "post",
      path: "/sandbox/orders/:id/dispute",
      tag: "Sandbox",
      summary: "The buyer or the seller opens a dispute on chain",
      body: { type: "object", additionalProperties: false, required: ["by"], properties: { by: { enum: ["BUYER", "SELLER"] } } },
      responses: { 200: { description: "{ txHash }" } },
      errors: ["VALIDATION_ERROR", "NOT_FOUND", "INVALID_STATE"],
    },
    async (ctx, { body, params }) => {
      const row = await getOrderRow(pool, currentPartner(ctx).id, params.id!);
      requireStatus(row, "LOCKED");
      const party = gateway.walletClient(sandboxWalletOf(body.by === "BUYER" ? row.buyer_wallet : row.seller_wallet));
      const txHash = await mined(await party.writeContract({ address: escrow, abi: escrowAbi, functionName: "openDispute", args: [row.escrow_order_id as Hex], chain: gateway.chain }));
      ctx.body = { txHash };
    },
  );
}
