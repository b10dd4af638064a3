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
/// Roles: DEFAULT_ADMIN_ROLE manages the token allow-list, the treasury, pause and the other roles;
/// SERVICE_ROLE signs order terms (EIP-712), confirms payments and cancels; ARBITER_ROLE resolves
/// disputes.
///
/// Pause policy: pausing is for emergencies such as a leaked service or arbiter key. It blocks every
/// call that takes in new funds or commits an order to a buyer, and every call that pays a buyer:
/// `deposit`, `lock`, `confirmPayment`, and `resolveDispute` with a releasing outcome (BUYER,
/// NO_FAULT_RELEASE). It never blocks a path that returns funds to the depositing seller or that
/// protects a party, so no funds are trapped while paused: `refundExpiredLock`, `expireListing`,
/// `cancel`, `openDispute` (a buyer who paid can freeze the order before its lock times out) and
/// `resolveDispute` with a refunding or retry outcome (SELLER, NO_FAULT_REFUND, NO_FAULT_RETRY) keep
/// working. Money can therefore only leave to a seller while paused, never to a new party.
contract OfframpEscrow is AccessControl, EIP712, ReentrancyGuard, Pausable {
    using SafeERC20 for IERC20;

    // ------------------------------------------------------------------ constants

    bytes32 public constant SERVICE_ROLE = keccak256("SERVICE_ROLE");
    bytes32 public constant ARBITER_ROLE = keccak256("ARBITER_ROLE");

    bytes32 public constant ORDER_TERMS_TYPEHASH = keccak256(
        "OrderTerms(bytes32 orderId,address token,uint256 amount,uint16 feeBps,address feeRecipient,uint16 treasuryShareBps,uint64 depositDeadline,uint64 listingWindow,uint64 lockWindow)"
    );

    /// @notice Partner fee ceiling: 1000 bps = 10 % (the API's feePercent is 0..10).
    uint16 public constant MAX_FEE_BPS = 1000;
    uint16 public constant BPS_DENOMINATOR = 10_000;
    /// @notice Upper bound of listingWindow and lockWindow (keeps deadlines far from uint64 overflow).
    uint64 public constant MAX_WINDOW = 365 days;
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
    /// @param feeRecipient partner fee wallet; address(0) means the fee goes back to the seller (USER)
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

    /// @notice On-chain state of an order. Fields are ordered for storage packing (5 slots); read them
    /// by name.
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
    /// @notice Receives the service's revenue share of partner fees.
    address public treasury;

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
    /// @param feeRecipient the address actually paid the fee (the seller when the terms said address(0))
    /// @param feeAmount what feeRecipient received (fee minus the treasury share)
    /// @param treasuryAmount what the treasury received; buyerAmount + feeAmount + treasuryAmount == amount
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
    error InvalidSignature();
    error UnauthorizedSigner(address signer);
    error TransferAmountMismatch(uint256 expected, uint256 received);
    error SellerCannotLock();
    error ListingExpired(uint64 listingExpiresAt);
    error ListingNotExpired(uint64 listingExpiresAt);
    error LockNotExpired(uint64 lockExpiresAt);
    error InvalidCepHash();
    error CepHashAlreadyUsed(bytes32 cepHash);
    error NotOrderParty(address caller);
    error InvalidOutcome(uint8 outcome);

    // ------------------------------------------------------------------ constructor

    /// @param admin receives DEFAULT_ADMIN_ROLE (grants SERVICE_ROLE / ARBITER_ROLE afterwards)
    /// @param treasury_ receives the service's revenue share of fees
    constructor(address admin, address treasury_) EIP712("OfframpEscrow", "1") {
        if (admin == address(0) || treasury_ == address(0)) revert ZeroAddress();
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

    /// @notice Changes the treasury; applies to every release from now on.
    function setTreasury(address newTreasury) external onlyRole(DEFAULT_ADMIN_ROLE) {
        if (newTreasury == address(0)) revert ZeroAddress();
        emit TreasuryUpdated(treasury, newTreasury);
        treasury = newTreasury;
    }

    /// @notice Emergency stop; see the pause policy in the contract documentation.
    function pause() external onlyRole(DEFAULT_ADMIN_ROLE) {
        _pause();
    }

    function unpause() external onlyRole(DEFAULT_ADMIN_ROLE) {
        _unpause();
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

        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(hashTerms(terms), signature);
        if (err != ECDSA.RecoverError.NoError) revert InvalidSignature();
        if (!hasRole(SERVICE_ROLE, signer)) revert UnauthorizedSigner(signer);

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

    /// @notice A buyer (anyone but the seller) takes an Active, unexpired order and gets `lockWindow`
    /// seconds to pay the seller by SPEI.
    function lock(bytes32 orderId) external nonReentrant whenNotPaused {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Active);
        if (msg.sender == order.seller) revert SellerCannotLock();
        if (block.timestamp >= order.listingExpiresAt) revert ListingExpired(order.listingExpiresAt);
        uint64 lockExpiresAt = uint64(block.timestamp) + order.lockWindow;
        order.buyer = msg.sender;
        order.lockExpiresAt = lockExpiresAt;
        order.status = Status.Locked;
        emit Locked(orderId, msg.sender, lockExpiresAt);
    }

    /// @notice The service has verified the CEP: pays buyer, fee recipient and treasury in one
    /// transaction. Accepted while Locked even after lockExpiresAt as long as nobody has refunded yet
    /// (the service only confirms payments made inside the lock window). A CEP hash is usable once ever.
    function confirmPayment(bytes32 orderId, bytes32 cepHash) external nonReentrant whenNotPaused onlyRole(SERVICE_ROLE) {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Locked);
        if (cepHash == bytes32(0)) revert InvalidCepHash();
        if (cepHashUsed[cepHash]) revert CepHashAlreadyUsed(cepHash);
        cepHashUsed[cepHash] = true;
        _release(orderId, order, cepHash);
    }

    /// @notice Anyone may refund the seller once a lock has timed out without payment. Works while paused.
    function refundExpiredLock(bytes32 orderId) external nonReentrant {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Locked);
        if (block.timestamp < order.lockExpiresAt) revert LockNotExpired(order.lockExpiresAt);
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
    /// cannot time out. Allowed as long as the order is Locked, even past lockExpiresAt if nobody has
    /// refunded it yet. Works while paused (see the pause policy).
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
    /// NO_FAULT_RETRY returns the order to Locked with a fresh lock window. DisputeResolved is emitted
    /// before the Released / Refunded of the same call. Releasing outcomes are blocked while paused.
    function resolveDispute(bytes32 orderId, uint8 outcome) external nonReentrant onlyRole(ARBITER_ROLE) {
        Order storage order = _orders[orderId];
        _requireStatus(orderId, order, Status.Disputed);
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
            order.status = Status.Locked;
            emit DisputeResolved(orderId, outcome, lockExpiresAt);
        }
    }

    // ------------------------------------------------------------------ views

    function getOrder(bytes32 orderId) external view returns (Order memory) {
        return _orders[orderId];
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

    /// @notice The EIP-712 domain separator of this deployment.
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    // ------------------------------------------------------------------ internals

    function _requireStatus(bytes32 orderId, Order storage order, Status expected) private view {
        Status status = order.status;
        if (status != expected) revert InvalidStatus(orderId, status);
    }

    /// @dev fee = amount * feeBps / 10000 and treasuryAmount = fee * treasuryShareBps / 10000, both
    /// rounded down; the buyer gets amount - fee, the fee recipient (the seller when unset) the rest.
    function _release(bytes32 orderId, Order storage order, bytes32 cepHash) private {
        order.status = Status.Released;
        Payout memory p;
        uint256 amount = order.amount;
        uint256 fee = (amount * order.feeBps) / BPS_DENOMINATOR;
        p.treasuryAmount = (fee * order.treasuryShareBps) / BPS_DENOMINATOR;
        p.feeAmount = fee - p.treasuryAmount;
        p.buyerAmount = amount - fee;
        p.buyer = order.buyer;
        p.feeRecipient = order.feeRecipient == address(0) ? order.seller : order.feeRecipient;
        p.treasury = treasury;

        emit Released(
            orderId, p.buyer, p.buyerAmount, p.feeRecipient, p.feeAmount, p.treasury, p.treasuryAmount, cepHash
        );

        IERC20 token = IERC20(order.token);
        if (p.buyerAmount != 0) token.safeTransfer(p.buyer, p.buyerAmount);
        if (p.feeAmount != 0) token.safeTransfer(p.feeRecipient, p.feeAmount);
        if (p.treasuryAmount != 0) token.safeTransfer(p.treasury, p.treasuryAmount);
    }

    function _refund(bytes32 orderId, Order storage order, uint8 reason) private {
        order.status = Status.Refunded;
        address seller = order.seller;
        uint256 amount = order.amount;
        emit Refunded(orderId, seller, amount, reason);
        IERC20(order.token).safeTransfer(seller, amount);
    }

    function _penalize(address account) private {
        int256 newScore = reputation[account] - DISPUTE_PENALTY;
        reputation[account] = newScore;
        emit ReputationChanged(account, -DISPUTE_PENALTY, newScore);
    }
}
