import { getAddress, zeroAddress, type Address, type Hex } from "viem";
import type { OrderTerms } from "../chain/escrow-gateway.ts";
import type { Pool } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
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
import { newId, randomHex } from "../domain/ids.ts";
import { assertKycAllowsOrder } from "../domain/kyc.ts";
import { money, usdcToRaw } from "../domain/money.ts";
import { mexicoPeriodStart } from "../domain/periods.ts";
import type { SanctionsList } from "../domain/sanctions.ts";
import { effectiveLimits, type PartnerWithSecrets } from "../partners/partners.ts";
import { consumeQuoteStatement, lockQuoteWithUser } from "../quotes/quotes.ts";
import { userOrderHistory } from "../users/users.ts";
import { orderReturning, type OrderRow } from "./queries.ts";
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
 * POST /orders, checks in the order of decisions section 6. The quote's row and its user's are locked in
 * one statement, so a quote is consumed by exactly one order and a user's orders are checked one at a
 * time; the user's history is read after the lock. A partner with a daily or monthly volume limit has its
 * row locked last, just before its volume is summed and the order inserted, so the limits hold under
 * concurrency while its orders are serialised only for the end of their transactions; a partner without
 * one takes no lock. Returns the new order as inserted; the actor, its CREATED entry, `order.created` and
 * the deposit timer are written in the same transaction.
 */
export async function createOrder(deps: OrderCreationDeps, partner: PartnerWithSecrets, request: NewOrderRequest): Promise<OrderRow> {
  const clabe = parseClabe(request.sellerClabe);
  return withTransaction(deps.pool, async (tx) => {
    // The order's moment: its month is the one its user's history is summed over, in the lock's statement.
    const now = new Date();
    const locked = await lockQuoteWithUser(tx, partner.id, request.quoteId, now);
    if (!locked) throw new InvalidQuoteError(`No quote ${request.quoteId} for this partner`);
    const { quote, user } = locked;
    // The quote names its user by id, one of this partner's: a ref this partner has no user for is
    // another user's too, so NOT_FOUND (after QUOTE_USER_MISMATCH in decisions 6) cannot be reached here.
    if (user.partnerUserRef !== request.partnerUserRef) throw new QuoteUserMismatchError(`The quote belongs to another user than "${request.partnerUserRef}"`);
    if (quote.usedAt !== null) throw new QuoteUsedError();
    if (quote.expiresAt.getTime() <= Date.now()) throw new QuoteExpiredError();
    if (user.isSanctioned) throw new UserSanctionedError();

    // Read after the user's lock when the lock's own read came too early: it sees every earlier order of
    // this user, committed before the lock was granted.
    const history = locked.history ?? (await userOrderHistory(tx, user.id, now));
    assertKycAllowsOrder(user, history.monthlyVolumeMxn);

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

    const aml = assessAml({
      totalMxn: quote.netAmountMxn,
      ordersLast24h: history.ordersLast24h,
      monthlyVolumeWithOrderMxn: money(history.monthlyVolumeMxn).plus(total).toFixed(2),
      kycTier: user.kycTier,
      accountAgeMs: now.getTime() - user.createdAt.getTime(),
      isPep: user.isPep,
      sanctionedWallet: history.wallets.some((wallet) => deps.sanctions.isSanctioned(wallet)),
    });

    const orderId = newId("ord");
    const escrowOrderId = `0x${randomHex(32)}` as Hex;
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
    const order = { id: orderId, partnerId: partner.id, partnerUserRef: user.partnerUserRef, expiresAt: depositDeadline };
    // The quote's consumption and the user's risk level are written in the order's own statement; the
    // order is inserted only if the quote was still unused.
    const inserted = await insertOrderWithActor<OrderRow>(tx, deps.ports, order, (actor) => ({
      before: `consumed AS (${consumeQuoteStatement("$4")}), risk AS (UPDATE users SET aml_risk_level = $20, updated_at = now() WHERE id = $3)`,
      text: `INSERT INTO orders (id, partner_id, user_id, quote_id, escrow_order_id, token, amount_usdc, amount_raw, total_mxn, exchange_rate,
           fee_percent, fee_recipient, fee_bps, fee_recipient_address, treasury_share_bps, seller_clabe, bank_code, deposit_deadline,
           deposit_signature, deposit_terms, aml_risk_score, aml_risk_level, machine_snapshot, status, expires_at, created_at, partner_fee_owed)
         SELECT $1, $2, $3, $4, $5, 'USDC', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $23, $19, $20, $24, $25, $17, $21, $22 FROM consumed
         RETURNING ${orderReturning("$26")}`,
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
        user.partnerUserRef,
      ],
    }));
    if (!inserted) throw new QuoteUsedError();
    return inserted;
  });
}
