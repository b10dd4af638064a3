/* global document, window, location */
// The market page (decisions 17): an injected EIP-1193 wallet signs in (EIP-4361), locks an order of the
// book with a service-signed permit, and the page shows where and how much to pay, takes the payment
// report and follows the trade to COMPLETED. Everything comes from /market/v1; the token stays in this tab.

import { h } from "./page.js";

const API = "/market/v1";
// lock((bytes32 orderId, address buyer, uint64 deadline) permit, bytes signature): keccak256 selector.
const LOCK_SELECTOR = "0xbef21dea";
const TOKEN_KEY = "offramp-market-token";
const WALLET_KEY = "offramp-market-wallet";

const $ = (id) => document.getElementById(id);
const state = { wallet: null, token: sessionStorage.getItem(TOKEN_KEY), me: null, trade: sessionStorage.getItem("offramp-market-trade"), kycSession: null, poll: null, sandbox: false };

function show(id, visible) {
  $(id).hidden = !visible;
}

function say(message) {
  $("notice").textContent = message;
  show("notice", Boolean(message));
}

function fail(error) {
  const message = error instanceof Error ? error.message : String(error);
  $("error").textContent = message;
  show("error", Boolean(message));
}

function clearError() {
  show("error", false);
}

function wallet() {
  if (!window.ethereum) throw new Error("No browser wallet found: install an Ethereum wallet extension (EIP-1193)");
  return window.ethereum;
}

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${API}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (response.status === 401 && state.token && path !== "/auth/session") signedOut();
  if (!response.ok) {
    const error = new Error(data?.message ? `${data.error}: ${data.message}` : `HTTP ${response.status}`);
    error.code = data?.error;
    error.status = response.status;
    throw error;
  }
  return data;
}

function hex(text) {
  return `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

const word = (value) => value.toString(16).padStart(64, "0");

/** ABI encoding of lock(permit, signature): a static tuple, then the offset, length and bytes of the signature. */
function lockCalldata(permit, signature) {
  const sig = signature.slice(2);
  const padded = sig.padEnd(Math.ceil(sig.length / 64) * 64, "0");
  return (
    LOCK_SELECTOR +
    permit.orderId.slice(2).toLowerCase().padStart(64, "0") +
    permit.buyer.slice(2).toLowerCase().padStart(64, "0") +
    word(BigInt(permit.deadline)) +
    word(128n) +
    word(BigInt(sig.length / 2)) +
    padded
  );
}

function money(value) {
  return Number(value).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

function fields(target, pairs) {
  const list = $(target);
  list.replaceChildren(...pairs.flatMap(([label, value, name]) => [h("dt", {}, label), h("dd", name ? { "data-field": name } : {}, value)]));
}

// --- wallet and session -------------------------------------------------------------------------

async function connect() {
  clearError();
  const accounts = await wallet().request({ method: "eth_requestAccounts" });
  if (!accounts?.length) throw new Error("The wallet shared no account");
  state.wallet = accounts[0];
  if (sessionStorage.getItem(WALLET_KEY) && sessionStorage.getItem(WALLET_KEY).toLowerCase() !== state.wallet.toLowerCase()) signedOut();
  render();
}

async function signIn() {
  clearError();
  if (!state.wallet) await connect();
  say("Sign the message in your wallet…");
  const challenge = await api("POST", "/auth/challenge", { address: state.wallet });
  const signature = await wallet().request({ method: "personal_sign", params: [hex(challenge.message), state.wallet] });
  const session = await api("POST", "/auth/session", { message: challenge.message, signature });
  state.token = session.token;
  sessionStorage.setItem(TOKEN_KEY, session.token);
  sessionStorage.setItem(WALLET_KEY, session.wallet);
  say("");
  await refresh();
}

function signedOut() {
  state.token = null;
  state.me = null;
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(WALLET_KEY);
  render();
}

async function signOut() {
  await api("DELETE", "/auth/session").catch(() => undefined);
  signedOut();
}

// --- views --------------------------------------------------------------------------------------

function render() {
  const signedIn = Boolean(state.token);
  $("wallet").textContent = state.wallet ?? sessionStorage.getItem(WALLET_KEY) ?? "";
  show("connect", !state.wallet && !signedIn);
  show("sign-in", Boolean(state.wallet) && !signedIn);
  show("sign-out", signedIn);
  show("intro", !signedIn);
  // The book is public: shown before a wallet connects; locking asks for the sign-in.
  show("book", true);
  for (const id of ["profile", "trades"]) show(id, signedIn);
  if (!signedIn) show("trade", false);
}

function renderProfile(me) {
  fields("profile-fields", [
    ["Wallet", h("code", {}, me.wallet)],
    ["Status", me.status + (me.suspendedUntil ? ` until ${new Date(me.suspendedUntil).toLocaleString()}` : ""), "status"],
    ["KYC", `${me.kycStatus} (${me.kycTier})`, "kyc"],
    ["Reputation", me.reputation, "reputation"],
    ["Open locks", me.openLocks, "openLocks"],
    ["Completed trades", me.completedTrades, "completedTrades"],
    ["Locks expired (30 days)", me.expiredLocks30d],
    ["Volume this month", `${money(me.monthlyVolumeMxn)} MXN`],
  ]);
  show("kyc-actions", me.kycTier === "NONE" || me.kycStatus === "PENDING");
}

async function loadBook() {
  const book = await api("GET", "/orders?limit=50");
  const rows = book.orders.map((order) =>
    h(
      "tr",
      { dataset: { order: order.escrowOrderId } },
      h("td", {}, `${order.receiveAmount} ${order.token}`),
      h("td", {}, money(order.totalMxn)),
      h("td", {}, (order.totalMxn / order.receiveAmount).toFixed(4)),
      h("td", {}, `${order.bankName} (${order.bankCode})`),
      h("td", {}, order.sellerReputation),
      h("td", {}, new Date(order.listingExpiresAt).toLocaleString()),
      h("td", {}, h("button", { type: "button", class: "lock", onclick: () => run(() => lock(order)) }, "Lock")),
    ),
  );
  $("book-rows").replaceChildren(...rows);
  show("book-empty", rows.length === 0);
}

async function loadTrades() {
  const list = await api("GET", "/trades?limit=20");
  $("trades-rows").replaceChildren(
    ...list.trades.map((trade) =>
      h(
        "tr",
        { dataset: { trade: trade.escrowOrderId } },
        h("td", {}, h("a", { href: "#", onclick: (event) => (event.preventDefault(), run(() => openTrade(trade.escrowOrderId))) }, `${trade.escrowOrderId.slice(0, 10)}…`)),
        h("td", {}, trade.status),
        h("td", {}, `${trade.amount} ${trade.token}`),
        h("td", {}, money(trade.totalMxn)),
        h("td", {}, trade.lockedAt ? new Date(trade.lockedAt).toLocaleString() : "—"),
      ),
    ),
  );
}

async function reloadLists() {
  state.me = await api("GET", "/me");
  renderProfile(state.me);
  await Promise.all([loadBook(), loadTrades()]);
}

async function refresh() {
  render();
  if (!state.token) return loadBook();
  await reloadLists();
  if (state.trade) await openTrade(state.trade).catch(() => undefined);
}

// --- KYC ----------------------------------------------------------------------------------------

async function startKyc() {
  const level = state.me && state.me.monthlyVolumeMxn >= 50000 ? "FULL" : "BASIC";
  const session = await api("POST", "/me/kyc", { level, returnUrl: `${location.origin}/market` });
  state.kycSession = session.sessionId;
  $("kyc-link").href = session.sessionUrl;
  show("kyc-link", true);
  show("kyc-approve", Boolean(state.sandbox));
  say("Complete the verification on the provider's page, then come back here.");
  state.me = await api("GET", "/me");
  renderProfile(state.me);
}

async function approveKycInSandbox() {
  state.me = await api("POST", `/sandbox/kyc/${state.kycSession}/decision`, { result: "APPROVED" });
  renderProfile(state.me);
  show("kyc-approve", false);
  say("Identity verified (sandbox).");
}

// --- lock, pay, follow ----------------------------------------------------------------------------

async function ensureChain(chainId) {
  const current = await wallet().request({ method: "eth_chainId" });
  if (Number(current) === chainId) return;
  await wallet().request({ method: "wallet_switchEthereumChain", params: [{ chainId: `0x${chainId.toString(16)}` }] });
}

async function lock(order) {
  clearError();
  if (!state.token) throw new Error("Connect your wallet and sign in to lock an order");
  if (!state.wallet) await connect();
  say("Asking the service for a lock permit…");
  const answer = await api("POST", `/orders/${order.escrowOrderId}/lock-permit`);
  await ensureChain(answer.chainId);
  say("Confirm the lock transaction in your wallet…");
  const txHash = await wallet().request({
    method: "eth_sendTransaction",
    params: [{ from: state.wallet, to: answer.escrowAddress, data: lockCalldata(answer.permit, answer.signature) }],
  });
  say(`Lock sent (${txHash.slice(0, 12)}…); waiting for the chain…`);
  state.trade = order.escrowOrderId;
  sessionStorage.setItem("offramp-market-trade", state.trade);
  await follow();
}

async function openTrade(escrowOrderId) {
  state.trade = escrowOrderId;
  sessionStorage.setItem("offramp-market-trade", escrowOrderId);
  const trade = await api("GET", `/trades/${escrowOrderId}`);
  renderTrade(trade);
  if (!["COMPLETED", "REFUNDED", "EXPIRED"].includes(trade.status)) startPolling();
  return trade;
}

function renderTrade(trade) {
  show("trade", true);
  $("trade-status").textContent = trade.status;
  $("trade-status").className = `badge ${trade.status}`;
  fields("trade-fields", [
    ["Order", h("code", {}, trade.escrowOrderId)],
    ["Amount", `${trade.amount} ${trade.token}`],
    ["Locked", trade.lockedAt ? new Date(trade.lockedAt).toLocaleString() : "—"],
    ["Pay before", trade.lockExpiresAt ? new Date(trade.lockExpiresAt).toLocaleString() : "—"],
    [
      "Payment report",
      trade.paymentReport ? `${trade.paymentReport.trackingKey} — ${trade.paymentReport.verification}` : "not yet reported",
      "report",
    ],
  ]);
  fields("pay-fields", [
    ["Amount", `${money(trade.payment.amountMxn)} MXN`, "amountMxn"],
    ["CLABE", h("code", {}, trade.payment.clabe), "clabe"],
    ["Bank", `${trade.payment.bankName} (${trade.payment.bankCode})`, "bank"],
    ["Concept", h("code", {}, trade.payment.concept), "concept"],
  ]);
  show("pay", trade.status === "LOCKED");
  $("trade-timeline").replaceChildren(
    ...trade.timeline.map((entry) => h("li", { dataset: { event: entry.event } }, `${new Date(entry.timestamp).toLocaleTimeString()} ${entry.event}${entry.data?.reason ? ` (${entry.data.reason})` : ""}`)),
  );
}

function startPolling() {
  if (state.poll) return;
  state.poll = setInterval(() => {
    if (!state.token || !state.trade) return stopPolling();
    api("GET", `/trades/${state.trade}`)
      .then((trade) => {
        renderTrade(trade);
        if (["COMPLETED", "REFUNDED", "EXPIRED"].includes(trade.status)) {
          stopPolling();
          say(trade.status === "COMPLETED" ? "Trade completed: the USDC is in your wallet." : `Trade ended: ${trade.status}`);
          reloadLists().catch(fail);
        }
      })
      .catch(() => undefined);
  }, 1000);
}

function stopPolling() {
  clearInterval(state.poll);
  state.poll = null;
}

/** Waits until the indexer has seen the lock (the trade exists), then shows it. */
async function follow() {
  for (let attempt = 0; attempt < 120; attempt++) {
    try {
      const trade = await openTrade(state.trade);
      say(`Locked. Pay ${money(trade.payment.amountMxn)} MXN by SPEI to the CLABE shown, with the concept ${trade.payment.concept}.`);
      await reloadLists();
      return;
    } catch (error) {
      if (error.status !== 404) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  throw new Error("The lock was not seen on chain in time; check your wallet's transaction");
}

async function simulateSpei() {
  const paid = await api("POST", `/sandbox/trades/${state.trade}/spei`, {});
  $("report-key").value = paid.trackingKey;
  $("report-date").value = paid.operationDate;
  $("report-bank").value = paid.senderBankCode;
  say(`Simulated SPEI transfer ${paid.trackingKey} (concept ${paid.concept}); now report it.`);
}

async function reportPayment(event) {
  event.preventDefault();
  const answer = await api("POST", `/trades/${state.trade}/payment`, {
    trackingKey: $("report-key").value.trim(),
    operationDate: $("report-date").value,
    senderBankCode: $("report-bank").value.trim(),
  });
  say(`Payment reported; the service is fetching the CEP (${answer.paymentReport.verification}).`);
  await openTrade(state.trade);
}

// --- wiring -------------------------------------------------------------------------------------

function run(action) {
  clearError();
  Promise.resolve()
    .then(action)
    .catch((error) => {
      say("");
      fail(error);
    });
}

$("connect").addEventListener("click", () => run(connect));
$("sign-in").addEventListener("click", () => run(signIn));
$("sign-out").addEventListener("click", () => run(signOut));
$("book-refresh").addEventListener("click", () => run(loadBook));
$("kyc-start").addEventListener("click", () => run(startKyc));
$("kyc-approve").addEventListener("click", () => run(approveKycInSandbox));
$("spei-simulate").addEventListener("click", () => run(simulateSpei));
$("report-form").addEventListener("submit", (event) => run(() => reportPayment(event)));

fetch("/market/v1/openapi.json")
  .then((response) => response.json())
  .then((document) => {
    state.sandbox = Boolean(document.paths["/sandbox/trades/{escrowOrderId}/spei"]);
    show("spei-simulate", state.sandbox);
  })
  .catch(() => undefined);
if (window.ethereum?.on) {
  window.ethereum.on("accountsChanged", (accounts) => {
    state.wallet = accounts[0] ?? null;
    if (state.wallet && sessionStorage.getItem(WALLET_KEY)?.toLowerCase() !== state.wallet.toLowerCase()) signedOut();
    render();
  });
}
run(refresh);
