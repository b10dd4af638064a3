import { randomBytes } from "node:crypto";
import { getAddress, zeroAddress, type Address, type Hex } from "viem";
import type { OrderTerms } from "../chain/escrow-gateway.ts";
import type { Pool } from "../db/pool.ts";
import { prepared, withTransaction } from "../db/pool.ts";
import { assessAml } from "../domain/aml.ts";
import { parseClabe } from "../domain/clabe.ts";
import {
  ChainUnavailableError,
  InvalidQuoteError,
  QuoteExpiredError,
  QuoteUsedError,
  QuoteUserMismatchError,
  UserSanctionedError,
  VolumeLimitExceededError,
} from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import { assertKycAllowsOrder } from "../domain/kyc.ts";
import { money, usdcToRaw } from "../domain/money.ts";
import { mexicoPeriodStart } from "../domain/periods.ts";
import type { SanctionsList } from "../domain/sanctions.ts";
import { effectiveLimits, type PartnerWithSecrets } from "../partners/partners.ts";
import { consumeQuote, findQuote } from "../quotes/quotes.ts";
import { userVolumes } from "../users/users.ts";
import { insertOrderWithActor, type OrderEffectPorts } from "./store.ts";
import { keptTerms, newOrderTerms } from "./terms.ts";

export interface OrderCreationDeps {
  pool: Pool;
  ports: OrderEffectPorts;
  sanctions: SanctionsList;
  chain: {
    chainId: number;
    escrowAddress: Address;
    usdcAddress: Address;
    signTerms(terms: OrderTerms): Promise<Hex>;
    /** The escrow's treasury as last read from the contract (undefined before the first read): the fee recipient of a partner without a fee wallet. */
    treasuryAddress(): Address | undefined;
  };
  timing: { depositTimeoutSeconds: number; listingTimeoutSeconds: number; lockWindowSeconds: number };
}

export interface NewOrderRequest {
  quoteId: string;
  partnerUserRef: string;
  sellerClabe: string;
}

/** Sum of `totalMxn` of the partner's orders created since `since` that did not end EXPIRED (the volume limits; the dashboard's usage). */
export async function partnerVolumeSince(db: Pick<Pool, "query">, partnerId: string, since: Date): Promise<string> {
  const { rows } = await db.query<{ total: string }>(
    "SELECT coalesce(sum(total_mxn), 0) AS total FROM orders WHERE partner_id = $1 AND created_at >= $2 AND status <> 'EXPIRED'",
    [partnerId, since],
  );
  return rows[0]!.total;
}

/** `partnerVolumeSince` the current Mexico City day and month, in one statement. */
async function partnerDayAndMonthVolumes(db: Pick<Pool, "query">, partnerId: string, now: Date): Promise<{ day: string; month: string }> {
  const day = mexicoPeriodStart("day", now);
  const month = mexicoPeriodStart("month", now);
  const { rows } = await db.query<{ day: string; month: string }>(
    `SELECT coalesce(sum(total_mxn) FILTER (WHERE created_at >= $2), 0) AS day, coalesce(sum(total_mxn), 0) AS month
       FROM orders WHERE partner_id = $1 AND created_at >= $3 AND status <> 'EXPIRED'`,
    [partnerId, day, month],
  );
  return rows[0]!;
}

function knownTreasury(deps: OrderCreationDeps): Address {
  const treasury = deps.chain.treasuryAddress();
  if (treasury === undefined) throw new ChainUnavailableError();
  return treasury;
}

/**
 * POST /orders, checks in the order of decisions section 6. The quote row is locked, so a quote is
 * consumed by exactly one order, then the user's. A partner with a daily or monthly volume limit has its
 * row locked last, just before its volume is summed and the order inserted, so the limits hold under
 * concurrency while its orders are serialised only for the end of their transactions; a partner without
 * one takes no lock. Returns the new order's id; the actor, its CREATED entry, `order.created` and the
 * deposit timer are written in the same transaction.
 */
export async function createOrder(deps: OrderCreationDeps, partner: PartnerWithSecrets, request: NewOrderRequest): Promise<string> {
  const clabe = parseClabe(request.sellerClabe);
  return withTransaction(deps.pool, async (tx) => {
    const quote = await findQuote(tx, partner.id, request.quoteId, true);
    if (!quote) throw new InvalidQuoteError(`No quote ${request.quoteId} for this partner`);
    const { rows: userRows } = await tx.query<{ id: string; partner_user_ref: string; kyc_status: string; kyc_tier: "NONE" | "BASIC" | "FULL"; is_pep: boolean; is_sanctioned: boolean; created_at: Date }>(
      prepared(
        "SELECT id, partner_user_ref, kyc_status, kyc_tier, is_pep, is_sanctioned, created_at FROM users WHERE partner_id = $1 AND partner_user_ref = $2 FOR UPDATE",
        [partner.id, request.partnerUserRef],
      ),
    );
    const user = userRows[0];
    // The quote names its user by id, one of this partner's: a ref this partner has no user for is
    // another user's too, so NOT_FOUND (after QUOTE_USER_MISMATCH in decisions 6) cannot be reached here.
    if (!user || user.id !== quote.userId) throw new QuoteUserMismatchError(`The quote belongs to another user than "${request.partnerUserRef}"`);
    if (quote.usedAt !== null) throw new QuoteUsedError();
    if (quote.expiresAt.getTime() <= Date.now()) throw new QuoteExpiredError();
    if (user.is_sanctioned) throw new UserSanctionedError();

    const now = new Date();
    const volumes = await userVolumes(tx, user.id, now);
    assertKycAllowsOrder({ kycStatus: user.kyc_status, kycTier: user.kyc_tier }, volumes.monthlyVolumeMxn);

    const limits = effectiveLimits(partner);
    const total = money(quote.netAmountMxn);

    let feeRecipientAddress: Address = zeroAddress;
    let treasuryShareBps = 0;
    const feeBps = quote.feeRecipient === "NONE" ? 0 : money(quote.feePercent).times(100).toNumber();
    // A partner without a fee wallet is paid through the treasury (decisions 5): the terms name the treasury
    // as the fee recipient, so it is credited the whole fee, and the partner's part is recorded as owed.
    // Its address comes from memory (src/chain/treasury.ts): the transaction never waits on the chain.
    const partnerFeeOwed = quote.feeRecipient === "PARTNER" && !partner.feeWallet && feeBps > 0;
    if (quote.feeRecipient === "PARTNER") {
      feeRecipientAddress = partner.feeWallet ? getAddress(partner.feeWallet) : partnerFeeOwed ? getAddress(knownTreasury(deps)) : zeroAddress;
      treasuryShareBps = money(limits.revenueSharePercent).times(100).toNumber();
    }

    const { rows: history } = await tx.query<{ wallets: string[]; last_24h: string }>(
      prepared(
        `SELECT coalesce((SELECT array_agg(DISTINCT w) FROM orders, unnest(ARRAY[seller_wallet, buyer_wallet]) AS w WHERE user_id = $1 AND w IS NOT NULL), '{}') AS wallets,
                (SELECT count(*) FROM orders WHERE user_id = $1 AND created_at > now() - interval '24 hours') AS last_24h`,
        [user.id],
      ),
    );
    const aml = assessAml({
      totalMxn: quote.netAmountMxn,
      ordersLast24h: Number(history[0]!.last_24h),
      monthlyVolumeWithOrderMxn: money(volumes.monthlyVolumeMxn).plus(total).toFixed(2),
      kycTier: user.kyc_tier,
      accountAgeMs: now.getTime() - user.created_at.getTime(),
      isPep: user.is_pep,
      sanctionedWallet: history[0]!.wallets.some((wallet) => deps.sanctions.isSanctioned(wallet)),
    });

    const orderId = newId("ord");
    const escrowOrderId = `0x${randomBytes(32).toString("hex")}` as Hex;
    const amountRaw = usdcToRaw(quote.amountUsdc);
    const depositDeadline = new Date(now.getTime() + deps.timing.depositTimeoutSeconds * 1000);
    // Built and signed once, here, and kept with the order (src/orders/terms.ts owns them).
    const terms = newOrderTerms({
      escrowOrderId,
      token: deps.chain.usdcAddress,
      amountRaw,
      feeBps,
      feeRecipient: feeRecipientAddress,
      treasuryShareBps,
      depositDeadline,
      listingWindowSeconds: deps.timing.listingTimeoutSeconds,
      lockWindowSeconds: deps.timing.lockWindowSeconds,
    });
    const signature = await deps.chain.signTerms(terms);

    if (limits.dailyVolumeMxn !== null || limits.monthlyVolumeMxn !== null) {
      // NO KEY UPDATE: exclusive among creators, yet it lets the foreign key checks of the partner's
      // order counts (key-share locks, taken by every state change of its orders) through; FOR UPDATE
      // blocked them and deadlocked a creation waiting for a count row that such a change held. Taken
      // last, after the signature: the sum below then sees every order committed before this one.
      await tx.query("SELECT 1 FROM partners WHERE id = $1 FOR NO KEY UPDATE", [partner.id]);
      const used = await partnerDayAndMonthVolumes(tx, partner.id, now);
      for (const [period, limit] of [["day", limits.dailyVolumeMxn], ["month", limits.monthlyVolumeMxn]] as const) {
        if (limit !== null && money(used[period]).plus(total).gt(limit)) {
          throw new VolumeLimitExceededError(`The partner's ${period === "day" ? "daily" : "monthly"} volume limit of ${limit} MXN would be exceeded`);
        }
      }
    }
    if (!(await consumeQuote(tx, quote.id))) throw new QuoteUsedError();

    await tx.query(prepared("UPDATE users SET aml_risk_level = $2, updated_at = now() WHERE id = $1", [user.id, aml.level]));
    const order = { id: orderId, partnerId: partner.id, partnerUserRef: user.partner_user_ref, expiresAt: depositDeadline };
    await insertOrderWithActor(tx, deps.ports, order, (actor) => ({
      text: `INSERT INTO orders (id, partner_id, user_id, quote_id, escrow_order_id, token, amount_usdc, amount_raw, total_mxn, exchange_rate,
           fee_percent, fee_recipient, fee_bps, fee_recipient_address, treasury_share_bps, seller_clabe, bank_code, deposit_deadline,
           deposit_signature, deposit_terms, aml_risk_score, aml_risk_level, machine_snapshot, status, expires_at, created_at, partner_fee_owed)
         VALUES ($1, $2, $3, $4, $5, 'USDC', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $23, $19, $20, $24, $25, $17, $21, $22)
         RETURNING id`,
      values: [
        orderId,
        partner.id,
        user.id,
        quote.id,
        escrowOrderId,
        quote.amountUsdc,
        amountRaw.toString(),
        quote.netAmountMxn,
        quote.exchangeRate,
        quote.feePercent,
        quote.feeRecipient,
        feeBps,
        feeRecipientAddress,
        treasuryShareBps,
        clabe.clabe,
        clabe.bankCode,
        depositDeadline,
        signature,
        aml.score,
        aml.level,
        now,
        partnerFeeOwed,
        JSON.stringify(keptTerms(terms)),
        actor.snapshot,
        actor.status,
      ],
    }));
    return orderId;
  });
}
