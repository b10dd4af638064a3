// Property test: random sequences of every escrow call (valid and invalid, by the right and wrong
// accounts) across several orders, with time travel and pausing, checked against a reference model.
// After every step:
//   - the call succeeded or reverted exactly as the model predicts (same custom error);
//   - every order's on-chain status equals the model's;
//   - the escrow's token balance equals the open escrows (orders Active, Locked or Disputed) plus the
//     credited, unwithdrawn fee shares plus the stray tokens sent to it outside any order; the contract's
//     totalEscrowed, totalAccrued, strayBalance and every account's credit equal the model's;
//   - each order has been paid out or credited exactly its amount once it is Released/Refunded, and
//     nothing before (measured from the token's Transfer logs out of the escrow), with at most one payout
//     event; a release pays the buyer and credits fee recipient and treasury exactly the model's split;
//     a refund pays the seller; a withdrawal pays an owner its whole credit; a recovery only strays;
//   - lock permits: only the named wallet, unexpired, signed by the service; lock time stops while
//     paused (effective expiry = lockExpiresAt + pause time since the lock, lockExpiryOf), and the
//     refund grace period: the service alone refunds from the effective expiry, anyone from expiry + grace;
//   - reputations equal the model's.
// FC_RUNS / FC_SEED environment variables override the number of runs and the seed.
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import fc from "fast-check";
import { getAddress, keccak256, maxUint256, parseEventLogs, toHex, zeroAddress } from "viem";
import type { Address, Hex, TransactionReceipt } from "viem";
import { escrowAbi, testUsdcAbi } from "../../src/chain/escrow-abi.ts";
import { devAccounts } from "../../src/stack/local-node.ts";
import { GRACE, loadFixture, revertError } from "./fixtures.ts";
import type { Fixture, OrderTerms } from "./fixtures.ts";

const SLOTS = 4;
const PARTICIPANTS = [4, 5, 6, 8] as const; // sellers and buyers
const STRANGER = 9;
const PARTNER = 7;
const TREASURY = 3;
/** Accounts that can be credited fee shares and withdraw them. */
const CREDITED = [PARTNER, TREASURY, ...PARTICIPANTS] as const;
const NUM_RUNS = Number(process.env.FC_RUNS ?? 100);
const SEED = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);

type Status = 0 | 1 | 2 | 3 | 4 | 5; // None Active Locked Disputed Released Refunded

interface ModelOrder {
  status: Status;
  seller: Address;
  buyer: Address;
  amount: bigint;
  feeBps: number;
  feeRecipient: Address;
  share: number;
  listingExpiresAt: bigint;
  lockWindow: bigint;
  lockExpiresAt: bigint;
  pausedTotalAtLock: bigint;
}

/**
 * Which order an action targets: with `valid` (most of the time) one whose status makes the action
 * plausible (e.g. a Locked order for confirm), else any; `pick` chooses among the candidates. This
 * reaches deep states far more often than a uniformly random order would, and stays deterministic.
 */
interface Target {
  pick: number;
  valid: boolean;
}

type Action =
  | (Target & {
      kind: "deposit";
      seller: number;
      amount: bigint;
      feeBps: number;
      userFee: boolean;
      share: number;
      listingWindow: bigint;
      lockWindow: bigint;
      deadlineOffset: bigint;
      signedByService: boolean;
    })
  | (Target & { kind: "lock"; who: number; permit: "ok" | "otherWallet" | "expired" | "forged" })
  | (Target & { kind: "confirm"; cep: number; byService: boolean; otherBuyer?: boolean })
  | (Target & { kind: "refundExpiredLock"; who: number; byService: boolean })
  | { kind: "withdraw"; who: number }
  | { kind: "donate"; amount: bigint } // a plain transfer to the escrow, outside any order
  | { kind: "recover"; extra: bigint } // the admin recovers the stray balance plus `extra`
  | (Target & { kind: "expireListing"; who: number })
  | (Target & { kind: "cancel"; byService: boolean })
  | (Target & { kind: "openDispute"; party: "buyer" | "seller" | "stranger" })
  | (Target & { kind: "resolve"; outcome: number; byArbiter: boolean; otherBuyer?: boolean })
  | { kind: "time"; seconds: bigint }
  | { kind: "pause"; duration: number } // the admin pauses; unpaused again `duration` actions later
  | { kind: "unpause" };

const pick = fc.nat({ max: 1000 });
const valid = fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) });
const target = { pick, valid };
/** A release or resolution naming someone other than the lock holder (the escrow refuses it). */
const otherBuyer = fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });

/** The statuses in which each action can succeed (used to pick a plausible target). */
const plausible: Record<string, readonly Status[]> = {
  deposit: [0],
  lock: [1],
  confirm: [2],
  refundExpiredLock: [2],
  expireListing: [1],
  cancel: [1],
  openDispute: [2],
  resolve: [3],
};
const anyone = fc.constantFrom<number>(...PARTICIPANTS, STRANGER);
const windows = fc.constantFrom(100n, 1000n);

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("deposit" as const),
      ...target,
      seller: fc.constantFrom<number>(...PARTICIPANTS),
      amount: fc.oneof(
        { weight: 1, arbitrary: fc.constant(0n) },
        { weight: 2, arbitrary: fc.constantFrom(1n, 9n, 10n, 1_000_000n) },
        { weight: 6, arbitrary: fc.bigInt({ min: 1n, max: 10n ** 12n }) },
      ),
      feeBps: fc.oneof(
        { weight: 1, arbitrary: fc.constant(1001) },
        { weight: 8, arbitrary: fc.oneof(fc.constantFrom(0, 1, 100, 1000), fc.integer({ min: 0, max: 1000 })) },
      ),
      userFee: fc.boolean(),
      share: fc.oneof(
        { weight: 1, arbitrary: fc.constant(10_001) },
        { weight: 8, arbitrary: fc.oneof(fc.constantFrom(0, 2000, 3000, 10_000), fc.integer({ min: 0, max: 10_000 })) },
      ),
      listingWindow: windows,
      lockWindow: windows,
      deadlineOffset: fc.constantFrom(-1n, 0n, 0n, 0n, 60n, 60n, 60n, 60n, 60n, 60n),
      signedByService: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("lock" as const),
      ...target,
      who: anyone,
      permit: fc.oneof(
        { weight: 12, arbitrary: fc.constant("ok" as const) },
        { weight: 1, arbitrary: fc.constantFrom("otherWallet" as const, "expired" as const, "forged" as const) },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("confirm" as const),
      ...target,
      cep: fc.integer({ min: 0, max: 5 }),
      byService: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      otherBuyer,
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("refundExpiredLock" as const), ...target, who: anyone, byService: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("withdraw" as const), who: fc.constantFrom<number>(...CREDITED, STRANGER) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("donate" as const), amount: fc.bigInt({ min: 1n, max: 10n ** 9n }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("recover" as const), extra: fc.constantFrom(0n, 0n, 1n) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("expireListing" as const), ...target, who: anyone }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), ...target, byService: fc.boolean() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("openDispute" as const),
      ...target,
      party: fc.constantFrom("buyer" as const, "seller" as const, "stranger" as const),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("resolve" as const),
      ...target,
      outcome: fc.integer({ min: 0, max: 5 }),
      byArbiter: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      otherBuyer,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("time" as const),
      seconds: fc.constantFrom(1n, 50n, 98n, 99n, 100n, 500n, 998n, 999n, 1000n, 3500n, 3600n, 5000n),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("pause" as const), duration: fc.integer({ min: 1, max: 6 }) }) },
);

// Hand-written sequences run before the random ones, so every transition is always exercised.
// Targets resolve to the first plausible order (pick 0), so the comments name the slot acted on.
const deposit = (overrides: Partial<Extract<Action, { kind: "deposit" }>> = {}): Action => ({
  kind: "deposit",
  pick: 0,
  valid: true,
  seller: 4,
  amount: 1_000_000n,
  feeBps: 100,
  userFee: false,
  share: 3000,
  listingWindow: 100n,
  lockWindow: 100n,
  deadlineOffset: 60n,
  signedByService: true,
  ...overrides,
});
const first = { pick: 0, valid: true } as const;
const everyDisputeOutcome: Action[] = [
  { kind: "pause", duration: 1 },
  deposit(), // EnforcedPause, then the inserted unpause
  deposit(), // slot 0
  deposit({ seller: 5, userFee: true }), // slot 1
  deposit({ seller: 6, feeBps: 1000, share: 10_000 }), // slot 2
  deposit({ seller: 8, amount: 1n }), // slot 3
  { kind: "lock", ...first, who: 5, permit: "ok" }, // slot 0
  { kind: "confirm", ...first, cep: 0, byService: true, otherBuyer: true }, // NotLockHolder on slot 0
  { kind: "confirm", ...first, cep: 0, byService: true }, // slot 0 released
  { kind: "lock", ...first, who: 4, permit: "ok" }, // slot 1
  { kind: "confirm", ...first, cep: 0, byService: true }, // CepHashAlreadyUsed
  { kind: "openDispute", ...first, party: "buyer" },
  { kind: "resolve", ...first, outcome: 4, byArbiter: true }, // retry: slot 1 locked again
  { kind: "openDispute", ...first, party: "stranger" }, // NotOrderParty
  { kind: "openDispute", ...first, party: "seller" },
  { kind: "resolve", ...first, outcome: 5, byArbiter: true }, // InvalidOutcome
  { kind: "resolve", ...first, outcome: 0, byArbiter: true, otherBuyer: true }, // NotLockHolder
  { kind: "resolve", ...first, outcome: 0, byArbiter: true }, // slot 1 released, seller penalised
  { kind: "lock", ...first, who: 9, permit: "ok" }, // slot 2
  { kind: "openDispute", ...first, party: "buyer" },
  { kind: "resolve", ...first, outcome: 1, byArbiter: true }, // slot 2 refunded, buyer penalised
  { kind: "lock", ...first, who: 8, permit: "ok" }, // SellerCannotLock on slot 3
  { kind: "lock", ...first, who: 6, permit: "ok" }, // slot 3
  { kind: "openDispute", ...first, party: "seller" },
  { kind: "resolve", ...first, outcome: 2, byArbiter: true }, // slot 3 released, no penalty
];
const everyRefundPath: Action[] = [
  deposit(), // slot 0
  deposit({ seller: 5 }), // slot 1
  deposit({ seller: 6 }), // slot 2
  deposit({ seller: 8, listingWindow: 1000n }), // slot 3
  { kind: "lock", ...first, who: 5, permit: "ok" }, // slot 0
  { kind: "expireListing", ...first, who: 9 }, // ListingNotExpired on slot 1
  { kind: "refundExpiredLock", ...first, who: 9, byService: false }, // LockNotExpired on slot 0
  { kind: "cancel", ...first, byService: true }, // slot 1 cancelled
  { kind: "time", seconds: 100n },
  { kind: "lock", ...first, who: 4, permit: "ok" }, // ListingExpired on slot 2
  { kind: "expireListing", ...first, who: 4 }, // slot 2 expired
  { kind: "refundExpiredLock", ...first, who: 6, byService: true }, // slot 0 refunded
  deposit({ valid: false }), // OrderAlreadyExists on slot 0
  deposit({ valid: false, deadlineOffset: -1n }), // DepositDeadlinePassed (checked before the id)
  { kind: "lock", ...first, who: 4, permit: "ok" }, // slot 3
  { kind: "openDispute", ...first, party: "buyer" },
  { kind: "resolve", ...first, outcome: 3, byArbiter: true }, // slot 3 refunded, no penalty
];

const pullAndClock: Action[] = [
  deposit(), // slot 0
  deposit({ seller: 5 }), // slot 1
  deposit({ seller: 6, listingWindow: 1000n, lockWindow: 1000n }), // slot 2
  { kind: "lock", ...first, who: 9, permit: "otherWallet" }, // PermitNotForCaller on slot 0
  { kind: "lock", ...first, who: 9, permit: "expired" }, // PermitExpired
  { kind: "lock", ...first, who: 9, permit: "forged" }, // UnauthorizedSigner
  { kind: "lock", ...first, who: 9, permit: "ok" }, // slot 0
  { kind: "lock", ...first, who: 9, permit: "ok" }, // slot 1
  { kind: "lock", ...first, who: 8, permit: "ok" }, // slot 2
  { kind: "pause", duration: 3 },
  { kind: "time", seconds: 5000n }, // paused: lock time stands still
  { kind: "refundExpiredLock", ...first, who: 9, byService: true }, // EnforcedPause
  { kind: "withdraw", who: 7 }, // EnforcedPause; then the inserted unpause
  { kind: "refundExpiredLock", ...first, who: 9, byService: true }, // LockNotExpired: the pause moved the expiry
  { kind: "time", seconds: 100n },
  { kind: "refundExpiredLock", ...first, who: 9, byService: false }, // RefundGracePeriod on slot 0
  { kind: "confirm", ...first, cep: 1, byService: true }, // slot 0 released in the grace period, fees credited
  { kind: "time", seconds: 3600n },
  { kind: "confirm", ...first, cep: 2, byService: true }, // PaymentWindowClosed on slot 1
  { kind: "refundExpiredLock", ...first, who: 4, byService: false }, // slot 1 refunded by anyone
  { kind: "withdraw", who: 7 }, // the partner's credit
  { kind: "withdraw", who: 7 }, // NothingToWithdraw
  { kind: "withdraw", who: 3 }, // the treasury's credit
  { kind: "donate", amount: 12_345n },
  { kind: "recover", extra: 1n }, // InsufficientStray
  { kind: "recover", extra: 0n }, // the stray tokens only
];

/** How often each action kind ended in each outcome, over all runs. */
const coverage = new Map<string, number>();

const addressOf = (index: number): Address => getAddress(devAccounts[index]?.address ?? zeroAddress);
/** The buyer a release or resolution names: the lock holder, or else the first participant who is not. */
const namedBuyer = (o: { buyer: Address }, other = false): Address =>
  other ? (PARTICIPANTS.map(addressOf).find((a) => a !== o.buyer) ?? zeroAddress) : o.buyer;
const cepHash = (index: number): Hex => keccak256(toHex(`property-cep-${index}`));

describe("escrow invariants under random call sequences (fast-check)", () => {
  let f: Fixture;
  let baseSnapshot: Hex;
  let run = 0;

  before(async () => {
    f = await loadFixture();
    // Fund every participant and approve the escrow once; each run starts from this snapshot.
    for (const index of PARTICIPANTS) {
      await f.fund(addressOf(index), 10n ** 18n);
      await f.mined(f.wallet(index).writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "approve", args: [f.escrow, maxUint256] }));
    }
    baseSnapshot = await f.testClient.snapshot();
  });

  it("keeps the escrow solvent and pays every order out exactly once", async (t) => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 10, maxLength: 80, size: "max" }), async (actions) => {
        await f.testClient.revert({ id: baseSnapshot });
        baseSnapshot = await f.testClient.snapshot();
        run += 1;
        await checkSequence(f, actions, run);
      }),
      {
        numRuns: NUM_RUNS,
        seed: SEED,
        endOnFailure: process.env.FC_SHRINK === undefined,
        examples: [[everyDisputeOutcome], [everyRefundPath], [pullAndClock]],
      },
    );
    // Guard against a vacuous property: the runs (the two hand-written examples guarantee it, the
    // random sequences add breadth) must reach every transition and the boundary errors.
    const seen = [...coverage.entries()].sort(([a], [b]) => a.localeCompare(b));
    t.diagnostic(`steps by outcome: ${seen.map(([key, count]) => `${key}=${count}`).join(" ")}`);
    for (const key of [
      "deposit:ok",
      "lock:ok",
      "confirm:ok",
      "refundExpiredLock:ok",
      "expireListing:ok",
      "cancel:ok",
      "openDispute:ok",
      "resolve/0:ok",
      "resolve/1:ok",
      "resolve/2:ok",
      "resolve/3:ok",
      "resolve/4:ok",
      "confirm:CepHashAlreadyUsed",
      "confirm:NotLockHolder",
      "resolve/0:NotLockHolder",
      "lock:ListingExpired",
      "refundExpiredLock:LockNotExpired",
      "deposit:OrderAlreadyExists",
      "deposit:DepositDeadlinePassed",
      "deposit:EnforcedPause",
      "lock:SellerCannotLock",
      "expireListing:ListingNotExpired",
      "openDispute:NotOrderParty",
      "resolve/5:InvalidOutcome",
      "lock:PermitNotForCaller",
      "lock:PermitExpired",
      "lock:UnauthorizedSigner",
      "refundExpiredLock:EnforcedPause",
      "refundExpiredLock:RefundGracePeriod",
      "confirm:PaymentWindowClosed",
      "withdraw:ok",
      "withdraw:NothingToWithdraw",
      "withdraw:EnforcedPause",
      "donate:ok",
      "recover:ok",
      "recover:InsufficientStray",
    ]) {
      assert.ok((coverage.get(key) ?? 0) > 0, `no step reached ${key}; raise FC_RUNS`);
    }
  });
});

async function checkSequence(f: Fixture, actions: Action[], run: number): Promise<void> {
  const ids = Array.from({ length: SLOTS }, (_, i) => keccak256(toHex(`property-run-${run}-slot-${i}`)));
  const orders: ModelOrder[] = ids.map(() => ({
    status: 0,
    seller: zeroAddress,
    buyer: zeroAddress,
    amount: 0n,
    feeBps: 0,
    feeRecipient: zeroAddress,
    share: 0,
    listingExpiresAt: 0n,
    lockWindow: 0n,
    lockExpiresAt: 0n,
    pausedTotalAtLock: 0n,
  }));
  const paidOut = ids.map(() => 0n);
  const credited = ids.map(() => 0n); // fee shares credited by each order's release
  const credits = new Map<Address, bigint>(); // unwithdrawn credit per account (this run's token)
  const credit = (account: Address, amount: bigint) => credits.set(account, (credits.get(account) ?? 0n) + amount);
  let stray = 0n;
  let pausedTotal = 0n;
  let pausedAt = 0n;
  const pausedTotalAt = (t: bigint) => pausedTotal + (paused ? t - pausedAt : 0n);
  const effectiveExpiry = (o: ModelOrder, t: bigint) => o.lockExpiresAt + pausedTotalAt(t) - o.pausedTotalAtLock;
  const payoutEvents = ids.map(() => 0);
  const reputation = new Map<Address, bigint>();
  const usedCeps = new Set<number>();
  let paused = false;
  let clock = await f.now();
  // Credits and stray tokens left by earlier runs are undone by the snapshot revert; start from zero.
  assert.equal(await f.read("totalAccrued", [f.usdc]), 0n);
  const treasury = getAddress(await f.read("treasury", []));

  // A pause lasts `duration` actions, then an unpause is inserted.
  const schedule: Action[] = [];
  const unpauseAt: number[] = [];
  for (const action of actions) {
    while (unpauseAt.length > 0 && (unpauseAt[0] ?? 0) <= schedule.length) {
      unpauseAt.shift();
      schedule.push({ kind: "unpause" });
    }
    schedule.push(action);
    if (action.kind === "pause") {
      unpauseAt.push(schedule.length + action.duration);
      unpauseAt.sort((a, b) => a - b);
    }
  }

  for (const [step, action] of schedule.entries()) {
    let where = `run ${run} step ${step} ${JSON.stringify(action, (_, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))}`;
    if (action.kind === "time") {
      clock += action.seconds;
      continue;
    }
    clock += 1n;
    await f.testClient.setNextBlockTimestamp({ timestamp: clock });
    const t = clock;

    let expected: string | null = null; // the predicted custom error, or null for success
    let send: () => Promise<Hex>;
    let apply: () => void = () => {};
    let expectedTransfers: [Address, bigint][] = [];
    let slotIndex = -1;

    if (action.kind === "pause") {
      send = () => f.send(f.admin, "pause", []);
      if (paused) expected = "EnforcedPause";
      apply = () => {
        paused = true;
        pausedAt = t;
      };
    } else if (action.kind === "unpause") {
      send = () => f.send(f.admin, "unpause", []);
      if (!paused) expected = "ExpectedPause";
      apply = () => {
        pausedTotal += t - pausedAt;
        paused = false;
      };
    } else if (action.kind === "withdraw") {
      const who = addressOf(action.who);
      const amount = credits.get(who) ?? 0n;
      send = () => f.send(f.wallet(action.who), "withdraw", [f.usdc]);
      if (paused) expected = "EnforcedPause";
      else if (amount === 0n) expected = "NothingToWithdraw";
      expectedTransfers = [[who, amount]];
      apply = () => credits.set(who, 0n);
    } else if (action.kind === "donate") {
      send = () => f.mined(f.wallet(4).writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "transfer", args: [f.escrow, action.amount] })).then((r) => r.transactionHash);
      apply = () => (stray += action.amount);
    } else if (action.kind === "recover") {
      const amount = stray + action.extra;
      const to = addressOf(STRANGER);
      send = () => f.send(f.admin, "recoverTokens", [f.usdc, to, amount]);
      if (amount === 0n) expected = "ZeroAmount";
      else if (amount > stray) expected = "InsufficientStray";
      expectedTransfers = [[to, amount]];
      apply = () => (stray -= amount);
    } else {
      const wanted = plausible[action.kind] ?? [];
      const candidates = orders.flatMap((order, i) => (wanted.includes(order.status) ? [i] : []));
      // A "valid" action with no plausible target is skipped (it costs nothing); invalid calls come
      // from the other fifth of the actions, aimed at any order.
      if (action.valid && candidates.length === 0) continue;
      const pool = action.valid ? candidates : orders.map((_, i) => i);
      slotIndex = pool[action.pick % pool.length] ?? 0;
      const id = ids[slotIndex] as Hex;
      const o = orders[slotIndex] as ModelOrder;
      where += ` on slot ${slotIndex}`;
      const release = () => {
        const fee = (o.amount * BigInt(o.feeBps)) / 10_000n;
        const toTreasury = (fee * BigInt(o.share)) / 10_000n;
        const feePayee = o.feeRecipient === zeroAddress ? o.seller : o.feeRecipient;
        // Only the buyer is paid now; the fee shares are credited (pull payments).
        expectedTransfers = ([[o.buyer, o.amount - fee]] as [Address, bigint][]).filter(([, value]) => value > 0n);
        credit(feePayee, fee - toTreasury);
        credit(treasury, toTreasury);
        credited[slotIndex] = fee;
        o.status = 4;
      };
      const refund = () => {
        expectedTransfers = [[o.seller, o.amount]];
        o.status = 5;
      };
      const penalize = (account: Address) => reputation.set(account, (reputation.get(account) ?? 0n) - 50n);

      switch (action.kind) {
        case "deposit": {
          const terms: OrderTerms = {
            orderId: id,
            token: f.usdc,
            amount: action.amount,
            feeBps: action.feeBps,
            feeRecipient: action.userFee ? zeroAddress : addressOf(PARTNER),
            treasuryShareBps: action.share,
            depositDeadline: t + action.deadlineOffset,
            listingWindow: action.listingWindow,
            lockWindow: action.lockWindow,
          };
          const signature = await f.sign(terms, devAccounts[action.signedByService ? 1 : STRANGER].privateKey);
          send = () => f.send(f.wallet(action.seller), "deposit", [terms, signature]);
          if (paused) expected = "EnforcedPause";
          else if (t > terms.depositDeadline) expected = "DepositDeadlinePassed";
          else if (o.status !== 0) expected = "OrderAlreadyExists";
          else if (terms.amount === 0n) expected = "ZeroAmount";
          else if (terms.feeBps > 1000) expected = "FeeTooHigh";
          else if (terms.treasuryShareBps > 10_000) expected = "TreasuryShareTooHigh";
          else if (!action.signedByService) expected = "UnauthorizedSigner";
          apply = () => {
            Object.assign(o, {
              status: 1,
              seller: addressOf(action.seller),
              amount: terms.amount,
              feeBps: terms.feeBps,
              feeRecipient: terms.feeRecipient,
              share: terms.treasuryShareBps,
              listingExpiresAt: t + terms.listingWindow,
              lockWindow: terms.lockWindow,
            });
          };
          break;
        }
        case "lock": {
          const caller = addressOf(action.who);
          // "otherWallet": a valid permit for another wallet; "expired": deadline one second ago;
          // "forged": signed by the stranger's key.
          const named = action.permit === "otherWallet" ? addressOf(action.who === STRANGER ? 8 : STRANGER) : caller;
          const permit = { orderId: id, buyer: named, deadline: action.permit === "expired" ? t - 1n : t + 120n };
          const signature = await f.signPermit(permit, devAccounts[action.permit === "forged" ? STRANGER : 1].privateKey);
          send = () => f.send(f.wallet(action.who), "lock", [permit, signature]);
          if (paused) expected = "EnforcedPause";
          else if (o.status !== 1) expected = "InvalidStatus";
          else if (named !== caller) expected = "PermitNotForCaller";
          else if (t > permit.deadline) expected = "PermitExpired";
          else if (caller === o.seller) expected = "SellerCannotLock";
          else if (t >= o.listingExpiresAt) expected = "ListingExpired";
          else if (action.permit === "forged") expected = "UnauthorizedSigner";
          apply = () => {
            o.status = 2;
            o.buyer = caller;
            o.lockExpiresAt = t + o.lockWindow;
            o.pausedTotalAtLock = pausedTotal;
          };
          break;
        }
        case "confirm":
          send = () => f.send(action.byService ? f.service : f.stranger, "confirmPayment", [id, cepHash(action.cep), namedBuyer(o, action.otherBuyer)]);
          if (paused) expected = "EnforcedPause";
          else if (!action.byService) expected = "AccessControlUnauthorizedAccount";
          else if (o.status !== 2) expected = "InvalidStatus";
          else if (action.otherBuyer) expected = "NotLockHolder";
          else if (t >= effectiveExpiry(o, t) + GRACE) expected = "PaymentWindowClosed";
          else if (usedCeps.has(action.cep)) expected = "CepHashAlreadyUsed";
          apply = () => {
            usedCeps.add(action.cep);
            release();
          };
          break;
        case "refundExpiredLock":
          send = () => f.send(action.byService ? f.service : f.wallet(action.who), "refundExpiredLock", [id]);
          if (paused) expected = "EnforcedPause";
          else if (o.status !== 2) expected = "InvalidStatus";
          else if (t < effectiveExpiry(o, t)) expected = "LockNotExpired";
          else if (t < effectiveExpiry(o, t) + GRACE && !action.byService) expected = "RefundGracePeriod";
          apply = refund;
          break;
        case "expireListing":
          send = () => f.send(f.wallet(action.who), "expireListing", [id]);
          if (o.status !== 1) expected = "InvalidStatus";
          else if (t < o.listingExpiresAt) expected = "ListingNotExpired";
          apply = refund;
          break;
        case "cancel":
          send = () => f.send(action.byService ? f.service : f.stranger, "cancel", [id]);
          if (!action.byService) expected = "AccessControlUnauthorizedAccount";
          else if (o.status !== 1) expected = "InvalidStatus";
          apply = refund;
          break;
        case "openDispute": {
          // "stranger": the first participant who is neither this order's buyer nor its seller.
          const outsider = [STRANGER, ...PARTICIPANTS].map(addressOf).find((a) => a !== o.buyer && a !== o.seller) ?? zeroAddress;
          const caller = action.party === "buyer" ? o.buyer : action.party === "seller" ? o.seller : outsider;
          const wallet = caller === zeroAddress ? f.stranger : f.wallet(devAccounts.findIndex((a) => getAddress(a.address) === caller));
          send = () => f.send(wallet, "openDispute", [id]);
          if (o.status !== 2) expected = "InvalidStatus";
          else if (caller !== o.buyer && caller !== o.seller) expected = "NotOrderParty";
          apply = () => (o.status = 3);
          break;
        }
        case "resolve":
          send = () => f.send(action.byArbiter ? f.arbiter : f.stranger, "resolveDispute", [id, action.outcome, namedBuyer(o, action.otherBuyer)]);
          if (!action.byArbiter) expected = "AccessControlUnauthorizedAccount";
          else if (o.status !== 3) expected = "InvalidStatus";
          else if (action.otherBuyer) expected = "NotLockHolder";
          else if (action.outcome > 4) expected = "InvalidOutcome";
          else if (paused && (action.outcome === 0 || action.outcome === 2)) expected = "EnforcedPause";
          apply = () => {
            if (action.outcome === 0) {
              penalize(o.seller);
              release();
            } else if (action.outcome === 1) {
              penalize(o.buyer);
              refund();
            } else if (action.outcome === 2) release();
            else if (action.outcome === 3) refund();
            else {
              o.status = 2;
              o.lockExpiresAt = t + o.lockWindow;
              o.pausedTotalAtLock = pausedTotalAt(t);
            }
          };
          break;
      }
    }

    // Execute and compare with the prediction.
    let receipt: TransactionReceipt | undefined;
    let actual: string | null = null;
    try {
      receipt = await f.publicClient.getTransactionReceipt({ hash: await send() });
      assert.equal(receipt.status, "success", where);
    } catch (error) {
      const decoded = revertError(error);
      if (decoded === undefined) throw error;
      actual = decoded.errorName;
    }
    assert.equal(actual, expected, `${where}: outcome`);
    const coverageKey = `${action.kind}${action.kind === "resolve" ? `/${action.outcome}` : ""}:${expected ?? "ok"}`;
    coverage.set(coverageKey, (coverage.get(coverageKey) ?? 0) + 1);
    if (expected === null) apply();

    // Payouts in this step (token transfers out of the escrow), attributed to the order acted upon.
    if (receipt !== undefined) {
      const transfers = parseEventLogs({ abi: testUsdcAbi, eventName: "Transfer", logs: receipt.logs }).filter(
        (log) => getAddress(log.address) === f.usdc && getAddress(log.args.from) === f.escrow,
      );
      const out = transfers.map((log): [Address, bigint] => [getAddress(log.args.to), log.args.value]);
      assert.deepEqual(out, expectedTransfers, `${where}: transfers`);
      if (slotIndex >= 0) {
        paidOut[slotIndex] = (paidOut[slotIndex] ?? 0n) + out.reduce((sum, [, value]) => sum + value, 0n);
        const escrowLogs = parseEventLogs({ abi: escrowAbi, logs: receipt.logs });
        payoutEvents[slotIndex] =
          (payoutEvents[slotIndex] ?? 0) + escrowLogs.filter((log) => log.eventName === "Released" || log.eventName === "Refunded").length;
      }
    }

    // Invariants over every order. Views run at the latest block's time (a reverted call mines none).
    const viewTime = (await f.publicClient.getBlock()).timestamp;
    let owed = 0n;
    for (const [i, id] of ids.entries()) {
      const model = orders[i] as ModelOrder;
      const chain = await f.getOrder(id);
      assert.equal(chain.status, model.status, `${where}: status of slot ${i}`);
      assert.equal(chain.amount, model.amount, `${where}: amount of slot ${i}`);
      if (chain.status >= 1 && chain.status <= 3) owed += chain.amount;
      const terminal = model.status === 4 || model.status === 5;
      assert.equal((paidOut[i] ?? 0n) + (credited[i] ?? 0n), terminal ? model.amount : 0n, `${where}: paid out or credited for slot ${i}`);
      assert.equal(payoutEvents[i], terminal ? 1 : 0, `${where}: payout events for slot ${i}`);
      const expiry = await f.read("lockExpiryOf", [id]);
      assert.equal(expiry, model.status === 2 ? effectiveExpiry(model, viewTime) : 0n, `${where}: lockExpiryOf slot ${i}`);
    }
    // Solvency: the balance is exactly the open escrows, the unwithdrawn credits and the strays.
    let accrued = 0n;
    for (const index of CREDITED) {
      const account = addressOf(index);
      const want = credits.get(account) ?? 0n;
      accrued += want;
      assert.equal(await f.read("accrued", [account, f.usdc]), want, `${where}: credit of ${account}`);
    }
    assert.equal(await f.read("totalEscrowed", [f.usdc]), owed, `${where}: totalEscrowed`);
    assert.equal(await f.read("totalAccrued", [f.usdc]), accrued, `${where}: totalAccrued`);
    assert.equal(await f.read("strayBalance", [f.usdc]), stray, `${where}: strayBalance`);
    assert.equal(await f.balanceOf(f.escrow), owed + accrued + stray, `${where}: escrow balance equals open orders + credits + strays`);
    if (action.kind === "resolve" && expected === null) {
      for (const index of PARTICIPANTS) {
        const account = addressOf(index);
        assert.equal(await f.read("reputation", [account]), reputation.get(account) ?? 0n, `${where}: reputation of ${account}`);
      }
    }
  }
}
