// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {Pausable} from "@openzeppelin/contracts/utils/Pausable.sol";

/// @title OfframpEscrow
/// @notice Holds sellers' stablecoins for the crypto-to-peso offramp until the buyer's SPEI payment is
/// proven (release to the buyer), or the order times out, is cancelled or loses a dispute (refund to
/// the seller). One contract holds every order; each order is keyed by the API's `escrowOrderId`.
///
/// Life cycle (Status): None -> Active (deposit) -> Locked (lock) -> Released (confirmPayment) or
/// Refunded (refundExpiredLock); Locked -> Disputed (openDispute) -> Released / Refunded / Locked
/// (resolveDispute); Active -> Refunded (expireListing, cancel). Released and Refunded are terminal
/// and an order id can never be used again.
///
/// Roles: DEFAULT_ADMIN_ROLE manages the token allow-list, the treasury, pause, the other roles and
/// the recovery of stray tokens; SERVICE_ROLE signs order terms and lock permits (EIP-712), confirms
/// payments, cancels, and refunds expired locks during the refund grace period; ARBITER_ROLE resolves
/// disputes.
///
/// Locks: a buyer locks with a lock permit the service signed for that buyer's wallet (EIP-712
/// `LockPermit`), so only buyers the service admitted can take an order. A lock's effective expiry is
/// `lockExpiresAt` plus the time the escrow has been paused since the lock began (`lockExpiryOf`).
/// The service may confirm a payment until the effective expiry plus REFUND_GRACE_SECONDS; after the
/// effective expiry only the service may refund the lock, and after the grace period anyone may. The
/// service uses the grace period to finish verifying a payment the buyer reported inside the lock
/// window: while such a report is being verified it does not refund, and nobody else can.
///
/// Payouts: a release pays the buyer at once; every fee share (the partner's or the seller's fee and
/// the treasury's share) is credited inside the escrow (`accrued`) and withdrawn by its owner
/// (`withdraw`, pull payment), so a recipient that cannot receive the token never blocks a release.
/// The escrow always holds at least the open orders' amounts plus the credited, unwithdrawn shares of
/// each token; only what it holds beyond that (tokens sent to it outside any order) can be recovered
/// by the admin (`recoverTokens`).
///
/// Pause policy: pausing is for emergencies such as a leaked service or arbiter key. It blocks every
/// call that takes in new funds or commits an order to a buyer, and every call that pays anyone but
/// the depositing seller: `deposit`, `lock`, `confirmPayment`, `withdraw`, and `resolveDispute` with a
/// releasing outcome (BUYER, NO_FAULT_RELEASE). Pausing also stops time for locks: no locked order can
/// be refunded by lock expiry while paused (`refundExpiredLock` is blocked), and every lock's expiry,
/// as well as its confirmation deadline, moves by the time the escrow was paused during the lock, so a
/// buyer who paid in time is never refunded away because of a pause. Paths that only return funds to
/// the depositing seller or that protect a party keep working, so no order is trapped: `expireListing`,
/// `cancel`, `openDispute` (a party can freeze the order) and `resolveDispute` with a refunding or
/// retry outcome (SELLER, NO_FAULT_REFUND, NO_FAULT_RETRY). `recoverTokens` (admin, stray tokens only)
/// is not affected.
contract OfframpEscrow is AccessControl, EIP712, ReentrancyGuard, Pausable {
    using SafeERC20 for IERC20;

    // ------------------------------------------------------------------ constants

    bytes32 public constant SERVICE_ROLE = keccak256("SERVICE_ROLE");
    bytes32 public constant ARBITER_ROLE = keccak256("ARBITER_ROLE");

    bytes32 public constant ORDER_TERMS_TYPEHASH = keccak256(
        "OrderTerms(bytes32 orderId,address token,uint256 amount,uint16 feeBps,address feeRecipient,uint16 treasuryShareBps,uint64 depositDeadline,uint64 listingWindow,uint64 lockWindow)"
    );
    bytes32 public constant LOCK_PERMIT_TYPEHASH =
        keccak256("LockPermit(bytes32 orderId,address buyer,uint64 deadline)");

    /// @notice Partner fee ceiling: 1000 bps = 10 % (the API's feePercent is 0..10).
    uint16 public constant MAX_FEE_BPS = 1000;
    uint16 public constant BPS_DENOMINATOR = 10_000;
    /// @notice Upper bound of listingWindow and lockWindow (keeps deadlines far from uint64 overflow).
    uint64 public constant MAX_WINDOW = 365 days;
    /// @notice Upper bound of the refund grace period.
    uint64 public constant MAX_REFUND_GRACE = 30 days;
    /// @notice Reputation points lost by the losing side of a dispute.
    int256 public constant DISPUTE_PENALTY = 50;

    // Dispute outcomes (resolveDispute, DisputeResolved.outcome).
    uint8 public constant OUTCOME_BUYER = 0;
    uint8 public constant OUTCOME_SELLER = 1;
    uint8 public constant OUTCOME_NO_FAULT_RELEASE = 2;
    uint8 public constant OUTCOME_NO_FAULT_REFUND = 3;
    uint8 public constant OUTCOME_NO_FAULT_RETRY = 4;

    // Refund reasons (Refunded.reason).
    uint8 public constant REFUND_LOCK_EXPIRED = 0;
    uint8 public constant REFUND_LISTING_EXPIRED = 1;
    uint8 public constant REFUND_CANCELLED = 2;
    uint8 public constant REFUND_DISPUTE = 3;

    /// @notice Seconds after a lock's effective expiry during which the service may still confirm the
    /// payment and only the service may refund the lock; afterwards anyone may refund it and it can
    /// no longer be confirmed. Fixed at deployment.
    uint64 public immutable REFUND_GRACE_SECONDS;

    // ------------------------------------------------------------------ types

    enum Status {
        None,
        Active,
        Locked,
        Disputed,
        Released,
        Refunded
    }

    /// @notice What the service signs for one order; the seller submits it with the signature.
    /// @param orderId the API's escrowOrderId (used once ever)
    /// @param token allow-listed ERC-20 (USDC)
    /// @param amount token units escrowed
    /// @param feeBps partner fee in basis points (feePercent * 100), 0..MAX_FEE_BPS
    /// @param feeRecipient who is credited the fee less the treasury share: the partner's fee wallet;
    /// address(0) means the seller (USER fee); for a partner without a fee wallet the service names
    /// the treasury, which is then credited the whole fee (the partner's part is settled off-chain)
    /// @param treasuryShareBps the service's revenue share of the fee, 0..10000
    /// @param depositDeadline last timestamp at which deposit is accepted
    /// @param listingWindow seconds the order stays lockable after the deposit
    /// @param lockWindow seconds the buyer has to pay once locked
    struct OrderTerms {
        bytes32 orderId;
        address token;
        uint256 amount;
        uint16 feeBps;
        address feeRecipient;
        uint16 treasuryShareBps;
        uint64 depositDeadline;
        uint64 listingWindow;
        uint64 lockWindow;
    }

    /// @notice What the service signs to admit one buyer wallet to lock one order, until a deadline.
    /// A permit is usable once: it names one order, and an order is locked at most once ever (Active
    /// is entered only by the deposit and never re-entered; NO_FAULT_RETRY returns to Locked, not
    /// Active), so once a lock succeeds no permit for that order can succeed again.
    struct LockPermit {
        bytes32 orderId;
        address buyer;
        uint64 deadline;
    }

    /// @notice On-chain state of an order. Fields are ordered for storage packing (5 slots); read them
    /// by name. `lockExpiresAt` is the raw expiry set at lock (or retry); `pausedTotalAtLock` is the
    /// escrow's cumulative paused seconds at that moment (see lockExpiryOf).
    struct Order {
        address seller;
        uint16 feeBps;
        uint16 treasuryShareBps;
        uint64 lockWindow;
        address buyer;
        uint64 lockExpiresAt;
        Status status;
        address token;
        uint64 listingExpiresAt;
        address feeRecipient;
        uint64 pausedTotalAtLock;
        uint256 amount;
    }

    /// @dev Scratch record of one release (keeps _release under the stack limit without via-IR).
    struct Payout {
        address buyer;
        uint256 buyerAmount;
        address feeRecipient;
        uint256 feeAmount;
        address treasury;
        uint256 treasuryAmount;
    }

    // ------------------------------------------------------------------ storage

    mapping(bytes32 orderId => Order) private _orders;
    /// @notice Whether a CEP hash has already paid out an order (each CEP is used once ever).
    mapping(bytes32 cepHash => bool) public cepHashUsed;
    /// @notice Reputation score; starts at 0 and only changes through dispute outcomes.
    mapping(address account => int256) public reputation;
    /// @notice ERC-20 tokens accepted for new deposits.
    mapping(address token => bool) public tokenAllowed;
    /// @notice Fee shares credited to an account and not yet withdrawn, per token.
    mapping(address account => mapping(address token => uint256)) public accrued;
    /// @notice Sum of the amounts of the Active, Locked and Disputed orders, per token.
    mapping(address token => uint256) public totalEscrowed;
    /// @notice Sum of `accrued` over every account, per token.
    mapping(address token => uint256) public totalAccrued;
    /// @notice Receives the service's revenue share of partner fees.
    address public treasury;
    /// @notice Seconds the escrow has been paused in total, finished pauses only.
    uint64 public pausedTotal;
    /// @notice When the current pause began (0 while not paused).
    uint64 public pausedAt;

    // ------------------------------------------------------------------ events

    event Deposited(
        bytes32 indexed orderId,
        address indexed seller,
        address token,
        uint256 amount,
        uint16 feeBps,
        address feeRecipient,
        uint16 treasuryShareBps,
        uint64 listingExpiresAt,
        uint64 lockWindow
    );
    event Locked(bytes32 indexed orderId, address indexed buyer, uint64 lockExpiresAt);
    /// @param buyerAmount what the buyer was paid (transferred in this transaction)
    /// @param feeRecipient the account credited the fee (the seller when the terms said address(0))
    /// @param feeAmount what feeRecipient was credited (fee minus the treasury share), to withdraw
    /// @param treasuryAmount what the treasury was credited, to withdraw;
    /// buyerAmount + feeAmount + treasuryAmount == amount
    /// @param cepHash the payment proof, or bytes32(0) when released by a dispute resolution
    event Released(
        bytes32 indexed orderId,
        address indexed buyer,
        uint256 buyerAmount,
        address feeRecipient,
        uint256 feeAmount,
        address treasury,
        uint256 treasuryAmount,
        bytes32 cepHash
    );
    /// @param reason REFUND_LOCK_EXPIRED, REFUND_LISTING_EXPIRED, REFUND_CANCELLED or REFUND_DISPUTE
    event Refunded(bytes32 indexed orderId, address indexed seller, uint256 amount, uint8 reason);
    event DisputeOpened(bytes32 indexed orderId, address indexed openedBy, bool byBuyer);
    /// @param newLockExpiresAt the new lock deadline for NO_FAULT_RETRY, else 0
    event DisputeResolved(bytes32 indexed orderId, uint8 outcome, uint64 newLockExpiresAt);
    event ReputationChanged(address indexed account, int256 delta, int256 newScore);
    event TokenAllowed(address indexed token, bool allowed);
    event TreasuryUpdated(address indexed previousTreasury, address indexed newTreasury);
    /// @notice An account withdrew its credited fee shares of `token` to `to`.
    event Withdrawn(address indexed account, address indexed token, address to, uint256 amount);
    /// @notice The admin recovered tokens sent to the escrow outside any order.
    event TokensRecovered(address indexed token, address indexed to, uint256 amount);
    /// @notice Emitted with OpenZeppelin's Unpaused: the pause that just ended lasted `duration`
    /// seconds, and every open lock's expiry moved by as much; `pausedTotal` is the new cumulative sum.
    event LockClockResumed(uint64 duration, uint64 pausedTotal);

    // ------------------------------------------------------------------ errors

    error ZeroAddress();
    error OrderAlreadyExists(bytes32 orderId);
    error InvalidStatus(bytes32 orderId, Status status);
    error DepositDeadlinePassed(uint64 depositDeadline);
    error TokenNotAllowed(address token);
    error ZeroAmount();
    error FeeTooHigh(uint16 feeBps);
    error TreasuryShareTooHigh(uint16 treasuryShareBps);
    error InvalidWindow(uint64 listingWindow, uint64 lockWindow);
    error InvalidRefundGrace(uint64 refundGraceSeconds);
    error InvalidSignature();
    error UnauthorizedSigner(address signer);
    error TransferAmountMismatch(uint256 expected, uint256 received);
    error SellerCannotLock();
    error PermitNotForCaller(address buyer);
    error PermitExpired(uint64 deadline);
    error ListingExpired(uint64 listingExpiresAt);
    error ListingNotExpired(uint64 listingExpiresAt);
    error LockNotExpired(uint64 lockExpiresAt);
    error RefundGracePeriod(uint64 publicRefundAt);
    error PaymentWindowClosed(uint64 confirmDeadline);
    error InvalidCepHash();
    error CepHashAlreadyUsed(bytes32 cepHash);
    error NotOrderParty(address caller);
    error NotLockHolder(address buyer, address lockHolder);
    error InvalidOutcome(uint8 outcome);
    error NothingToWithdraw();
    error InsufficientStray(uint256 available);

    // ------------------------------------------------------------------ constructor

    /// @param admin receives DEFAULT_ADMIN_ROLE (grants SERVICE_ROLE / ARBITER_ROLE afterwards)
    /// @param treasury_ is credited the service's revenue share of fees
    /// @param refundGraceSeconds REFUND_GRACE_SECONDS, 0..MAX_REFUND_GRACE (the deploy uses 3600)
    constructor(address admin, address treasury_, uint64 refundGraceSeconds) EIP712("OfframpEscrow", "1") {
        if (admin == address(0) || treasury_ == address(0)) revert ZeroAddress();
        if (refundGraceSeconds > MAX_REFUND_GRACE) revert InvalidRefundGrace(refundGraceSeconds);
        REFUND_GRACE_SECONDS = refundGraceSeconds;
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        treasury = treasury_;
        emit TreasuryUpdated(address(0), treasury_);
    }

    // ------------------------------------------------------------------ admin

    /// @notice Allows or disallows a token for new deposits. Existing orders are unaffected.
    function setTokenAllowed(address token, bool allowed) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (token == address(0)) revert ZeroAddress();
        tokenAllowed[token] = allowed;
        emit TokenAllowed(token, allowed);
    }

    /// @notice Changes the treasury; applies to every release from now on. What the previous treasury
    /// was credited stays its own to withdraw.
    function setTreasury(address newTreasury) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newTreasury == address(0)) revert ZeroAddress();
        emit TreasuryUpdated(treasury, newTreasury);
        treasury = newTreasury;
    }

    /// @notice Emergency stop; see the pause policy in the contract documentation. Lock time stops.
    function pause() external onlyRole(DEFAULT_ADMIN_ROLE) {
        _pause();
        pausedAt = uint64(block.timestamp);
    }

    /// @notice Ends the pause; every open lock's expiry has moved by the pause's duration.
    function unpause() external onlyRole(DEFAULT_ADMIN_ROLE) {
        _unpause();
        uint64 duration = uint64(block.timestamp) - pausedAt;
        uint64 total = pausedTotal + duration;
        pausedTotal = total;
        pausedAt = 0;
        emit LockClockResumed(duration, total);
    }

    /// @notice Sends `amount` of `token` held by the escrow outside any order to `to`: at most the
    /// balance minus the open orders' amounts minus the credited, unwithdrawn fee shares of that token.
    /// Escrowed and credited funds can never be taken this way.
    function recoverTokens(address token, address to, uint256 amount) external nonReentrant onlyRole(DEFAULT_ADMIN_ROLE) {
        if (token == address(0) || to == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        uint256 available = strayBalance(token);
        if (amount > available) revert InsufficientStray(available);
        emit TokensRecovered(token, to, amount);
        IERC20(token).safeTransfer(to, amount);
    }

    // ------------------------------------------------------------------ order flow

    /// @notice Escrows `terms.amount` of `terms.token` from msg.sender, who becomes the seller and
    /// receives every refund. The terms must be signed (EIP-712) by a SERVICE_ROLE holder; the order id
    /// can be used once, so a signature can never be replayed. The caller must have approved the token.
    /// The terms do not name the seller: whoever first deposits with valid terms becomes the seller,
    /// funding the order with their own tokens; the service takes the on-chain seller as authoritative.
    function deposit(OrderTerms calldata terms, bytes calldata signature) external nonReentrant whenNotPaused {
        if (block.timestamp > terms.depositDeadline) revert DepositDeadlinePassed(terms.depositDeadline);
        Order storage order = _orders[terms.orderId];
        if (order.status != Status.None) revert OrderAlreadyExists(terms.orderId);
        if (!tokenAllowed[terms.token]) revert TokenNotAllowed(terms.token);
        if (terms.amount == 0) revert ZeroAmount();
        if (terms.feeBps > MAX_FEE_BPS) revert FeeTooHigh(terms.feeBps);
        if (terms.treasuryShareBps > BPS_DENOMINATOR) revert TreasuryShareTooHigh(terms.treasuryShareBps);
        if (
            terms.listingWindow == 0 || terms.lockWindow == 0 || terms.listingWindow > MAX_WINDOW
                || terms.lockWindow > MAX_WINDOW
        ) revert InvalidWindow(terms.listingWindow, terms.lockWindow);

        _requireServiceSignature(hashTerms(terms), signature);

        uint64 listingExpiresAt = uint64(block.timestamp) + terms.listingWindow;
        order.seller = msg.sender;
        order.feeBps = terms.feeBps;
        order.treasuryShareBps = terms.treasuryShareBps;
        order.lockWindow = terms.lockWindow;
        order.status = Status.Active;
        order.token = terms.token;
        order.listingExpiresAt = listingExpiresAt;
        if (terms.feeRecipient != address(0)) order.feeRecipient = terms.feeRecipient;
        order.amount = terms.amount;
        totalEscrowed[terms.token] += terms.amount;

        emit Deposited(
            terms.orderId,
            msg.sender,
            terms.token,
            terms.amount,
            terms.feeBps,
            terms.feeRecipient,
            terms.treasuryShareBps,
            listingExpiresAt,
            terms.lockWindow
        );

        // Pull last (checks-effects-interactions) and insist the full amount arrived, so fee-on-transfer
        // or rebasing tokens can never leave the escrow holding less than it owes.
        IERC20 token = IERC20(terms.token);
        uint256 balanceBefore = token.balanceOf(address(this));
        token.safeTransferFrom(msg.sender, address(this), terms.amount);
        uint256 received = token.balanceOf(address(this)) - balanceBefore;
        if (received != terms.amount) revert TransferAmountMismatch(terms.amount, received);
    }

    /// @notice A buyer admitted by the service takes an Active, unexpired order and gets `lockWindow`
    /// seconds to pay the seller by SPEI. The permit must be signed (EIP-712 `LockPermit`) by a
    /// SERVICE_ROLE holder, name this order and msg.sender as the buyer, and not be past its deadline
    /// (the deadline's own second included). The seller can never lock its own order.
    function lock(LockPermit calldata permit, bytes calldata signature) external nonReentrant whenNotPaused {
        bytes32 orderId = permit.orderId;
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Active);
        if (msg.sender != permit.buyer) revert PermitNotForCaller(permit.buyer);
        if (block.timestamp > permit.deadline) revert PermitExpired(permit.deadline);
        if (msg.sender == order.seller) revert SellerCannotLock();
        if (block.timestamp >= order.listingExpiresAt) revert ListingExpired(order.listingExpiresAt);
        _requireServiceSignature(hashLockPermit(permit), signature);

        uint64 lockExpiresAt = uint64(block.timestamp) + order.lockWindow;
        order.buyer = msg.sender;
        order.lockExpiresAt = lockExpiresAt;
        order.status = Status.Locked;
        // Not paused here (whenNotPaused), so pausedTotal is the whole paused time so far.
        order.pausedTotalAtLock = pausedTotal;
        emit Locked(orderId, msg.sender, lockExpiresAt);
    }

    /// @notice The service has verified the CEP: pays the buyer and credits the fee recipient and the
    /// treasury, in one transaction. Accepted while Locked until the lock's effective expiry plus
    /// REFUND_GRACE_SECONDS (exclusive), even if the lock has expired, since the service confirms only
    /// payments made inside the lock window; from then on the lock can only be refunded (or disputed).
    /// A CEP hash is usable once ever. `buyer` is the lock holder whose payment the CEP proves: the call
    /// reverts unless it still holds the lock, so a signed release sent again after a reorganisation (in
    /// which another buyer may have locked the order) can only ever pay the buyer who paid.
    function confirmPayment(bytes32 orderId, bytes32 cepHash, address buyer) external nonReentrant whenNotPaused onlyRole(SERVICE_ROLE) {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Locked);
        _requireLockHolder(order, buyer);
        uint64 confirmDeadline = _lockExpiry(order) + REFUND_GRACE_SECONDS;
        if (block.timestamp >= confirmDeadline) revert PaymentWindowClosed(confirmDeadline);
        if (cepHash == bytes32(0)) revert InvalidCepHash();
        if (cepHashUsed[cepHash]) revert CepHashAlreadyUsed(cepHash);
        cepHashUsed[cepHash] = true;
        _release(orderId, order, cepHash);
    }

    /// @notice Refunds the seller of a lock that timed out unpaid. Verified payment beats the clock:
    /// from the lock's effective expiry (lockExpiryOf) only a SERVICE_ROLE holder may call it, for
    /// REFUND_GRACE_SECONDS, during which the service may still confirm a payment reported inside the
    /// lock window (it refunds only when no such report is being verified); from effective expiry +
    /// REFUND_GRACE_SECONDS anyone may, and the payment can no longer be confirmed. Blocked while
    /// paused: a pause stops lock time.
    function refundExpiredLock(bytes32 orderId) external nonReentrant whenNotPaused {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Locked);
        uint64 expiry = _lockExpiry(order);
        if (block.timestamp < expiry) revert LockNotExpired(expiry);
        uint64 publicRefundAt = expiry + REFUND_GRACE_SECONDS;
        if (block.timestamp < publicRefundAt && !hasRole(SERVICE_ROLE, msg.sender)) {
            revert RefundGracePeriod(publicRefundAt);
        }
        _refund(orderId, order, REFUND_LOCK_EXPIRED);
    }

    /// @notice Anyone may refund the seller once an Active listing has expired unlocked. Works while paused.
    function expireListing(bytes32 orderId) external nonReentrant {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Active);
        if (block.timestamp < order.listingExpiresAt) revert ListingNotExpired(order.listingExpiresAt);
        _refund(orderId, order, REFUND_LISTING_EXPIRED);
    }

    /// @notice The service cancels an Active (not yet locked) order, refunding the seller. Works while paused.
    function cancel(bytes32 orderId) external nonReentrant onlyRole(SERVICE_ROLE) {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Active);
        _refund(orderId, order, REFUND_CANCELLED);
    }

    /// @notice The buyer or the seller freezes a Locked order for the arbiter. While Disputed the order
    /// has no lock clock: it cannot time out, and lockExpiryOf answers 0. Allowed as long as the order
    /// is Locked, even past its expiry if nobody has refunded it yet. Works while paused.
    function openDispute(bytes32 orderId) external nonReentrant {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Locked);
        bool byBuyer = msg.sender == order.buyer;
        if (!byBuyer && msg.sender != order.seller) revert NotOrderParty(msg.sender);
        order.status = Status.Disputed;
        emit DisputeOpened(orderId, msg.sender, byBuyer);
    }

    /// @notice The arbiter settles a dispute. OUTCOME_BUYER releases as confirmPayment would (without a
    /// CEP hash) and costs the seller DISPUTE_PENALTY reputation; OUTCOME_SELLER refunds and costs the
    /// buyer DISPUTE_PENALTY; NO_FAULT_RELEASE / NO_FAULT_REFUND do the same without penalty;
    /// NO_FAULT_RETRY returns the order to Locked with a fresh lock window that starts now: pauses
    /// before the retry do not extend it, pause time from now on (the rest of a current pause
    /// included) does. DisputeResolved is emitted before the Released / Refunded of the same call.
    /// Releasing outcomes are blocked while paused. `buyer` is the lock holder of the dispute decided: the
    /// call reverts unless it still holds the order, so a decision cannot pay, penalise or relock
    /// another buyer's lock.
    function resolveDispute(bytes32 orderId, uint8 outcome, address buyer) external nonReentrant onlyRole(ARBITER_ROLE) {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Disputed);
        _requireLockHolder(order, buyer);
        if (outcome > OUTCOME_NO_FAULT_RETRY) revert InvalidOutcome(outcome);

        if (outcome == OUTCOME_BUYER || outcome == OUTCOME_NO_FAULT_RELEASE) {
            _requireNotPaused();
            emit DisputeResolved(orderId, outcome, 0);
            if (outcome == OUTCOME_BUYER) _penalize(order.seller);
            _release(orderId, order, bytes32(0));
        } else if (outcome == OUTCOME_SELLER || outcome == OUTCOME_NO_FAULT_REFUND) {
            emit DisputeResolved(orderId, outcome, 0);
            if (outcome == OUTCOME_SELLER) _penalize(order.buyer);
            _refund(orderId, order, REFUND_DISPUTE);
        } else {
            uint64 lockExpiresAt = uint64(block.timestamp) + order.lockWindow;
            order.lockExpiresAt = lockExpiresAt;
            order.pausedTotalAtLock = _pausedTotalNow();
            order.status = Status.Locked;
            emit DisputeResolved(orderId, outcome, lockExpiresAt);
        }
    }

    /// @notice Sends msg.sender all its credited fee shares of `token`. Blocked while paused.
    function withdraw(address token) external {
        withdrawTo(token, msg.sender);
    }

    /// @notice Sends msg.sender's credited fee shares of `token` to `to` (e.g. when msg.sender itself
    /// cannot receive the token). Blocked while paused.
    function withdrawTo(address token, address to) public nonReentrant whenNotPaused {
        if (to == address(0)) revert ZeroAddress();
        uint256 amount = accrued[msg.sender][token];
        if (amount == 0) revert NothingToWithdraw();
        accrued[msg.sender][token] = 0;
        totalAccrued[token] -= amount;
        emit Withdrawn(msg.sender, token, to, amount);
        IERC20(token).safeTransfer(to, amount);
    }

    // ------------------------------------------------------------------ views

    function getOrder(bytes32 orderId) external view returns (Order memory) {
        return _orders[orderId];
    }

    /// @notice The effective expiry of a Locked order: lockExpiresAt moved by the time the escrow has
    /// been paused since the lock began (the current pause included, so it keeps moving while paused);
    /// 0 for an order that is not Locked. The service's lock timers follow this value.
    function lockExpiryOf(bytes32 orderId) external view returns (uint64) {
        Order storage order = _orders[orderId];
        if (order.status != Status.Locked) return 0;
        return _lockExpiry(order);
    }

    /// @notice Cumulative paused seconds, the current pause included.
    function pausedTotalNow() external view returns (uint64) {
        return _pausedTotalNow();
    }

    /// @notice What recoverTokens could send of `token`: the balance beyond the open orders and the
    /// credited fee shares.
    function strayBalance(address token) public view returns (uint256) {
        uint256 balance = IERC20(token).balanceOf(address(this));
        uint256 owed = totalEscrowed[token] + totalAccrued[token];
        return balance > owed ? balance - owed : 0;
    }

    /// @notice The EIP-712 digest the service signs for `terms` (domain "OfframpEscrow", version "1",
    /// this chain, this contract).
    function hashTerms(OrderTerms calldata terms) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    ORDER_TERMS_TYPEHASH,
                    terms.orderId,
                    terms.token,
                    terms.amount,
                    terms.feeBps,
                    terms.feeRecipient,
                    terms.treasuryShareBps,
                    terms.depositDeadline,
                    terms.listingWindow,
                    terms.lockWindow
                )
            )
        );
    }

    /// @notice The EIP-712 digest the service signs for a lock permit (same domain as hashTerms).
    function hashLockPermit(LockPermit calldata permit) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(LOCK_PERMIT_TYPEHASH, permit.orderId, permit.buyer, permit.deadline)));
    }

    /// @notice The EIP-712 domain separator of this deployment.
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    // ------------------------------------------------------------------ internals

    function _requireStatus(bytes32 orderId, Order storage order, Status expected) private view {
        Status status = order.status;
        if (status != expected) revert InvalidStatus(orderId, status);
    }

    function _requireLockHolder(Order storage order, address buyer) private view {
        if (order.buyer != buyer) revert NotLockHolder(buyer, order.buyer);
    }

    function _requireServiceSignature(bytes32 digest, bytes calldata signature) private view {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signature);
        if (err != ECDSA.RecoverError.NoError) revert InvalidSignature();
        if (!hasRole(SERVICE_ROLE, signer)) revert UnauthorizedSigner(signer);
    }

    function _pausedTotalNow() private view returns (uint64) {
        return paused() ? pausedTotal + (uint64(block.timestamp) - pausedAt) : pausedTotal;
    }

    function _lockExpiry(Order storage order) private view returns (uint64) {
        return order.lockExpiresAt + (_pausedTotalNow() - order.pausedTotalAtLock);
    }

    /// @dev fee = amount * feeBps / 10000 and treasuryAmount = fee * treasuryShareBps / 10000, both
    /// rounded down; the buyer is paid amount - fee at once, the fee recipient (the seller when unset)
    /// and the treasury are credited the rest (pull payment: see withdraw).
    function _release(bytes32 orderId, Order storage order, bytes32 cepHash) private {
        order.status = Status.Released;
        Payout memory p;
        uint256 amount = order.amount;
        address token = order.token;
        uint256 fee = (amount * order.feeBps) / BPS_DENOMINATOR;
        p.treasuryAmount = (fee * order.treasuryShareBps) / BPS_DENOMINATOR;
        p.feeAmount = fee - p.treasuryAmount;
        p.buyerAmount = amount - fee;
        p.buyer = order.buyer;
        p.feeRecipient = order.feeRecipient == address(0) ? order.seller : order.feeRecipient;
        p.treasury = treasury;

        totalEscrowed[token] -= amount;
        if (fee != 0) {
            totalAccrued[token] += fee;
            if (p.feeAmount != 0) accrued[p.feeRecipient][token] += p.feeAmount;
            if (p.treasuryAmount != 0) accrued[p.treasury][token] += p.treasuryAmount;
        }

        emit Released(
            orderId, p.buyer, p.buyerAmount, p.feeRecipient, p.feeAmount, p.treasury, p.treasuryAmount, cepHash
        );

        if (p.buyerAmount != 0) IERC20(token).safeTransfer(p.buyer, p.buyerAmount);
    }

    function _refund(bytes32 orderId, Order storage order, uint8 reason) private {
        order.status = Status.Refunded;
        address seller = order.seller;
        uint256 amount = order.amount;
        address token = order.token;
        totalEscrowed[token] -= amount;
        emit Refunded(orderId, seller, amount, reason);
        IERC20(token).safeTransfer(seller, amount);
    }

    function _penalize(address account) private {
        int256 newScore = reputation[account] - DISPUTE_PENALTY;
        reputation[account] = newScore;
        emit ReputationChanged(account, -DISPUTE_PENALTY, newScore);
    }
}
