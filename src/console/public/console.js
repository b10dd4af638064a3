/* global document, window, location, confirm */
// The operator console: a single page over the admin API (/admin/v1). The admin token typed at sign-in is
// kept in sessionStorage (this tab only) and sent as a Bearer token; every figure on the page comes from
// the API. Views are chosen by the URL hash (#/overview, #/orders/<id>, ...). Text from the API is always
// set as text (never as HTML).

import { renderChart } from "./chart.js";
import { act, ApiError, h, notify, statusTag, when } from "./page.js";
import { ORDER_STATUSES as STATUSES } from "./orders.js";

const TOKEN_KEY = "offramp.adminToken";
const API = "/admin/v1";
const OUTCOMES = [
  { value: "BUYER", label: "Buyer wins (release to buyer, seller −50)" },
  { value: "SELLER", label: "Seller wins (refund to seller, buyer −50)" },
  { value: "NO_FAULT_RELEASE", label: "No fault: release to buyer" },
  { value: "NO_FAULT_REFUND", label: "No fault: refund to seller" },
  { value: "NO_FAULT_RETRY", label: "No fault: retry (back to LOCKED, new lock window)" },
];

// ---------------------------------------------------------------- plumbing

const token = () => sessionStorage.getItem(TOKEN_KEY);

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${API}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (response.status === 401) {
    signOut("The admin token was refused. Sign in again.");
    throw new ApiError(401, parsed);
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

const mxn = (value) => (value === null || value === undefined ? "—" : `${Number(value).toLocaleString("es-MX", { minimumFractionDigits: 2, maximumFractionDigits: 2 })} MXN`);
const usdc = (value) => (value === null || value === undefined ? "—" : `${Number(value).toLocaleString("en-US", { maximumFractionDigits: 6 })} USDC`);
const orderLink = (id) => h("a", { href: `#/orders/${encodeURIComponent(id)}` }, id);

// ---------------------------------------------------------------- session

let timers = [];
function stopTimers() {
  for (const timer of timers) clearInterval(timer);
  timers = [];
}
function every(ms, work) {
  timers.push(setInterval(() => work().catch(() => undefined), ms));
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  stopTimers();
  document.getElementById("app").hidden = true;
  document.getElementById("login").hidden = false;
  const error = document.getElementById("login-error");
  error.textContent = message ?? "";
  error.hidden = !message;
}

async function signIn(candidate) {
  sessionStorage.setItem(TOKEN_KEY, candidate);
  try {
    await api("GET", "/stats");
  } catch (error) {
    if (error.status !== 401) signOut(`The service could not be reached: ${error.message}`);
    return;
  }
  document.getElementById("login").hidden = true;
  document.getElementById("app").hidden = false;
  if (!location.hash || location.hash === "#/") location.hash = "#/overview";
  else route();
}

// ---------------------------------------------------------------- shared data

let machineCache;
async function machine() {
  machineCache ??= await api("GET", "/machine");
  return machineCache;
}

async function refreshBadges(stats) {
  const current = stats ?? (await api("GET", "/stats"));
  for (const [id, count] of [
    ["badge-disputes", current.queues.disputes],
    ["badge-high-risk", current.queues.highRisk],
  ]) {
    const badge = document.getElementById(id);
    badge.textContent = String(count);
    badge.className = count > 0 ? "badge hot" : "badge";
  }
  return current;
}

// ---------------------------------------------------------------- overview

async function overviewView(view) {
  const chart = h("div", { class: "chart", id: "overview-chart" });
  const counts = h("div", { class: "stat-list", id: "state-counts" });
  const deliveries = h("div", { class: "stat-list", id: "delivery-counts" });
  const updated = h("span", { class: "muted", id: "stats-updated" });
  const signers = h("div", { class: "stat-list", id: "signer-balances" }, h("span", { class: "muted" }, "Reading the chain…"));
  view.append(
    h(
      "div",
      { class: "overview" },
      h(
        "section",
        { class: "card" },
        h("h2", {}, "Orders by state ", updated),
        h("p", { class: "muted" }, "Drawn from the order machine's definition; the number in each state is live (refreshed every 5 s). Click a state to list its orders."),
        chart,
      ),
      h(
        "div",
        {},
        h("section", { class: "card" }, h("h2", {}, "Orders per state"), counts),
        h("section", { class: "card" }, h("h2", {}, "Webhook deliveries"), deliveries),
        h("section", { class: "card" }, h("h2", {}, "Gas money"), signers),
      ),
    ),
  );
  const definition = await machine();
  let shown = "";
  const draw = async () => {
    const stats = await refreshBadges();
    updated.textContent = `· updated ${new Date(stats.generatedAt).toLocaleTimeString()}`;
    const key = JSON.stringify(stats.orders.byStatus);
    if (key !== shown) {
      shown = key;
      await renderChart(chart, definition, { counts: stats.orders.byStatus, onStateClick: (state) => (location.hash = `#/orders?status=${state}`) });
    }
    counts.replaceChildren(
      ...STATUSES.flatMap((status) => [h("a", { href: `#/orders?status=${status}` }, status), h("strong", { class: "num", "data-count-for": status }, String(stats.orders.byStatus[status] ?? 0))]),
      h("span", {}, "Total"),
      h("strong", { class: "num" }, String(stats.orders.total)),
    );
    deliveries.replaceChildren(
      ...Object.entries(stats.deliveries.byStatus).flatMap(([status, n]) => [h("a", { href: `#/deliveries?status=${status}` }, status), h("strong", { class: "num" }, String(n))]),
    );
  };
  await draw();
  every(5_000, draw);
  await drawSigners(signers);
  every(30_000, () => drawSigners(signers));
}

/** The keys that pay for the service's transactions (GET /signers): balance, and LOW with the reason. */
async function drawSigners(list) {
  let body;
  try {
    body = await api("GET", "/signers");
  } catch (error) {
    // 404: a service without a chain; 503: the chain cannot be read right now.
    list.replaceChildren(h("span", { class: "muted" }, error instanceof ApiError && error.status === 404 ? "No chain configured" : "The chain cannot be read right now"));
    return;
  }
  list.replaceChildren(
    ...body.signers.flatMap((signer) => [
      h("span", { title: signer.address }, `${signer.role} ${signer.address.slice(0, 10)}…`),
      h(
        "strong",
        { class: "num", "data-signer": signer.role, "data-low": String(signer.low) },
        `${Number(signer.balanceEth).toLocaleString("en-US", { maximumFractionDigits: 4 })} ETH `,
        statusTag(signer.low ? "LOW" : "OK"),
      ),
      ...(signer.reason ? [h("span", { class: "muted signer-reason" }, signer.reason), h("span")] : []),
    ]),
  );
}

// ---------------------------------------------------------------- orders list

function orderTable(orders, columns = ["id", "partner", "user", "status", "amount", "total", "risk", "created"]) {
  const head = {
    id: "Order",
    partner: "Partner",
    user: "User",
    status: "Status",
    amount: "Amount",
    total: "Total MXN",
    risk: "AML",
    created: "Created",
    dispute: "Dispute",
  };
  const cell = {
    id: (order) => h("td", {}, orderLink(order.id)),
    partner: (order) => h("td", {}, order.partnerName ?? order.partnerId),
    user: (order) => h("td", {}, order.partnerUserRef),
    status: (order) => h("td", {}, statusTag(order.status)),
    amount: (order) => h("td", { class: "num" }, usdc(order.amount)),
    total: (order) => h("td", { class: "num" }, mxn(order.totalMxn)),
    risk: (order) => h("td", {}, statusTag(order.amlRiskLevel), ` ${order.amlRiskScore}`),
    created: (order) => h("td", {}, when(order.createdAt)),
    dispute: (order) => h("td", {}, order.dispute ? `opened by ${order.dispute.openedBy}` : "—"),
  };
  if (orders.length === 0) return h("p", { class: "muted" }, "No orders.");
  return h(
    "table",
    { class: "orders" },
    h("thead", {}, h("tr", {}, columns.map((column) => h("th", { class: column === "amount" || column === "total" ? "num" : undefined }, head[column])))),
    h(
      "tbody",
      {},
      orders.map((order) =>
        h("tr", { class: "clickable", "data-order-id": order.id, onclick: () => (location.hash = `#/orders/${encodeURIComponent(order.id)}`) }, columns.map((column) => cell[column](order))),
      ),
    ),
  );
}

function pager(page, go) {
  const from = page.total === 0 ? 0 : page.offset + 1;
  const to = page.offset + page.orders.length;
  return h(
    "div",
    { class: "pager" },
    h("button", { class: "secondary", disabled: page.offset === 0, onclick: () => go(Math.max(0, page.offset - page.limit)) }, "Previous"),
    h("span", { class: "muted" }, `${from}–${to} of ${page.total}`),
    h("button", { class: "secondary", disabled: !page.hasMore, onclick: () => go(page.offset + page.limit) }, "Next"),
  );
}

async function ordersView(view, params) {
  const field = (name, control) => h("div", {}, h("label", { for: `filter-${name}` }, name), control);
  const status = h("select", { id: "filter-status", name: "status" }, h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s, selected: params.get("status") === s }, s)));
  const risk = h("select", { id: "filter-amlRiskLevel", name: "amlRiskLevel" }, h("option", { value: "" }, "any"), ["LOW", "MEDIUM", "HIGH"].map((s) => h("option", { value: s, selected: params.get("amlRiskLevel") === s }, s)));
  const partner = h("input", { id: "filter-partnerId", name: "partnerId", value: params.get("partnerId") ?? "", placeholder: "ptn_…" });
  const user = h("input", { id: "filter-partnerUserRef", name: "partnerUserRef", value: params.get("partnerUserRef") ?? "" });
  const form = h(
    "form",
    {
      class: "filters",
      onsubmit: (event) => {
        event.preventDefault();
        const next = new URLSearchParams();
        for (const control of [status, risk, partner, user]) if (control.value.trim()) next.set(control.name, control.value.trim());
        location.hash = `#/orders?${next}`;
      },
    },
    field("status", status),
    field("partnerId", partner),
    field("partnerUserRef", user),
    field("amlRiskLevel", risk),
    h("button", { type: "submit" }, "Filter"),
  );
  const query = new URLSearchParams(params);
  if (!query.has("limit")) query.set("limit", "20");
  const page = await api("GET", `/orders?${query}`);
  view.append(
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Orders (every partner)"),
      form,
      orderTable(page.orders),
      pager(page, (offset) => {
        query.set("offset", String(offset));
        location.hash = `#/orders?${query}`;
      }),
    ),
  );
}

// ---------------------------------------------------------------- order inspector

function resolveForm(order, onDone) {
  const note = h("textarea", { name: "note", placeholder: "Why (kept on the order's timeline)", maxlength: "2000" });
  const choices = OUTCOMES.map((outcome) => h("label", {}, h("input", { type: "radio", name: `outcome-${order.id}`, value: outcome.value, required: true }), ` ${outcome.label}`));
  return h(
    "form",
    {
      class: "resolve-form",
      "data-order-id": order.id,
      onsubmit: (event) => {
        event.preventDefault();
        const chosen = event.currentTarget.querySelector("input[type=radio]:checked");
        if (!chosen) return notify("Choose an outcome first.", "error");
        if (!confirm(`Send the arbiter's ${chosen.value} resolution for ${order.id}? It is final on chain.`)) return;
        void act(async () => {
          await api("POST", `/orders/${encodeURIComponent(order.id)}/resolve`, { outcome: chosen.value, note: note.value.trim() || undefined });
          notify(`Resolution ${chosen.value} sent for ${order.id}; the order follows the chain.`);
          await onDone();
        });
      },
    },
    h("div", { class: "outcomes" }, choices),
    note,
    h("button", { type: "submit" }, "Resolve dispute"),
  );
}

function disputePanel(order, onDone) {
  if (!order.dispute) return null;
  const request = order.dispute.resolutionRequest;
  const rep = (party) => (party ? `${party.score}` : "—");
  return h(
    "section",
    { class: "card", id: "dispute-panel" },
    h("h2", {}, "Dispute"),
    h(
      "dl",
      { class: "kv" },
      h("dt", {}, "Opened by"),
      h("dd", {}, order.dispute.openedBy),
      h("dt", {}, "Outcome"),
      h("dd", {}, order.dispute.outcome ?? "not yet resolved"),
      h("dt", {}, "Reputation"),
      h("dd", {}, `seller ${rep(order.reputation.seller)} · buyer ${rep(order.reputation.buyer)}`),
    ),
    request
      ? h(
          "p",
          { class: "muted", id: "resolution-request" },
          `Resolution ${request.outcome} requested ${when(request.requestedAt)}${request.note ? ` — “${request.note}”` : ""}`,
          order.status === "DISPUTED" ? "; waiting for the chain." : ".",
        )
      : order.status === "DISPUTED"
        ? resolveForm(order, onDone)
        : null,
  );
}

function detailsCard(order) {
  const rows = [
    ["Partner", `${order.partnerName ?? ""} (${order.partnerId})`],
    ["User", order.partnerUserRef],
    ["Amount", usdc(order.amount)],
    ["Total", mxn(order.totalMxn)],
    ["Rate", order.fxRateUsdMxn],
    ["Fee", `${order.fee.feePercent}% to ${order.fee.feeRecipient} (service share ${order.fee.treasuryShareBps / 100}%)`],
    ["AML", `${order.amlRiskLevel} (${order.amlRiskScore})`],
    ["Escrow id", h("code", {}, order.escrowOrderId)],
    ["On chain", order.escrow ? order.escrow.status : "not indexed"],
    ["Seller wallet", h("code", {}, order.sellerWallet ?? "—"), order.reputation.seller ? ` reputation ${order.reputation.seller.score}` : ""],
    ["Buyer wallet", h("code", {}, order.buyerWallet ?? "—"), order.reputation.buyer ? ` reputation ${order.reputation.buyer.score}` : ""],
    ["Lock expires", when(order.lockExpiresAt)],
    ["Seller CLABE", `${order.bankAccount.clabe} (${order.bankAccount.bankName})`],
    ["Created", when(order.createdAt)],
    ["Completed", when(order.completedAt)],
  ];
  return h("section", { class: "card" }, h("h2", {}, "Order"), h("dl", { class: "kv" }, rows.flatMap(([name, ...value]) => [h("dt", {}, name), h("dd", {}, ...value)])));
}

function timelineCard(order) {
  return h(
    "section",
    { class: "card", id: "timeline" },
    h("h2", {}, "Timeline"),
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Event"), h("th", {}, "Data"))),
      h("tbody", {}, order.timeline.map((entry) => h("tr", {}, h("td", {}, when(entry.timestamp)), h("td", {}, h("strong", {}, entry.event)), h("td", {}, h("code", {}, JSON.stringify(entry.data)))))),
    ),
  );
}

function deliveriesTable(deliveries, onRedeliver, showOrder = false) {
  if (deliveries.length === 0) return h("p", { class: "muted" }, "No deliveries (the partner may have no webhook URL).");
  return h(
    "table",
    { class: "deliveries" },
    h(
      "thead",
      {},
      h("tr", {}, showOrder && h("th", {}, "Order"), h("th", {}, "#"), h("th", {}, "Event"), h("th", {}, "Status"), h("th", {}, "Attempts"), h("th", {}, "Last attempt"), h("th", {}, "Error"), h("th", {}, "")),
    ),
    h(
      "tbody",
      {},
      deliveries.map((delivery) =>
        h(
          "tr",
          { "data-delivery-id": delivery.id },
          showOrder && h("td", {}, orderLink(delivery.orderId)),
          h("td", {}, String(delivery.sequence)),
          h("td", {}, delivery.eventType),
          h("td", {}, statusTag(delivery.status)),
          h("td", {}, `${delivery.attempts}/${delivery.maxAttempts}${delivery.series > 1 ? ` (series ${delivery.series})` : ""}`),
          h("td", {}, when(delivery.lastAttemptAt)),
          h("td", {}, delivery.errorMessage ?? ""),
          h(
            "td",
            {},
            h(
              "button",
              {
                class: "secondary",
                onclick: () =>
                  act(async () => {
                    await api("POST", `/deliveries/${encodeURIComponent(delivery.id)}/redeliver`);
                    notify(`Delivery ${delivery.id} (${delivery.eventType}) queued again.`);
                    await onRedeliver();
                  }),
              },
              "Redeliver",
            ),
          ),
        ),
      ),
    ),
  );
}

function transactionsCard(order) {
  return h(
    "section",
    { class: "card", id: "transactions" },
    h("h2", {}, "Chain transactions"),
    order.transactions.length === 0
      ? h("p", { class: "muted" }, "The service has sent no transaction for this order.")
      : h(
          "table",
          {},
          h("thead", {}, h("tr", {}, h("th", {}, "Action"), h("th", {}, "Signer"), h("th", {}, "Status"), h("th", {}, "Transaction hash"), h("th", {}, "Asked"))),
          h(
            "tbody",
            {},
            order.transactions.map((tx) =>
              h(
                "tr",
                {},
                h("td", {}, tx.action, tx.params && tx.params.outcome ? ` (${tx.params.outcome})` : ""),
                h("td", {}, tx.signer),
                h("td", {}, statusTag(tx.status)),
                h("td", {}, h("code", { class: "tx-hash" }, tx.txHash ?? "—")),
                h("td", {}, when(tx.createdAt)),
              ),
            ),
          ),
        ),
    h(
      "p",
      { class: "muted" },
      "Chain events: ",
      ...[
        ["deposit", order.escrowTxHash],
        ["release", order.releaseTxHash],
        ["refund", order.refundTxHash],
      ]
        .filter(([, hash]) => hash)
        .flatMap(([name, hash]) => [`${name} `, h("code", {}, hash), " "]),
    ),
  );
}

async function orderView(view, id) {
  const definition = await machine();
  let version = -1;
  const draw = async () => {
    const order = await api("GET", `/orders/${encodeURIComponent(id)}`);
    const signature = JSON.stringify([order.machine.version, order.deliveries.map((d) => [d.status, d.attempts, d.series]), order.transactions.map((t) => t.status)]);
    if (signature === version) return;
    version = signature;
    const chart = h("div", { class: "chart", id: "order-chart" });
    view.replaceChildren(
      h("h1", {}, "Order ", h("code", {}, order.id), " ", h("span", { id: "order-status" }, statusTag(order.status))),
      h(
        "div",
        { class: "overview" },
        h(
          "section",
          { class: "card" },
          h("h2", {}, "Path through the state chart"),
          h("p", { class: "muted" }, "From the order's timeline: the states it went through are shaded, the current one filled, the edges it took drawn thick."),
          chart,
          h("p", { id: "order-path" }, order.path.map((step) => step.state).join(" → ")),
        ),
        h("div", {}, disputePanel(order, draw), detailsCard(order)),
      ),
      timelineCard(order),
      h("section", { class: "card", id: "order-deliveries" }, h("h2", {}, "Webhook deliveries"), deliveriesTable(order.deliveries, draw)),
      transactionsCard(order),
    );
    await renderChart(chart, definition, { path: order.path });
  };
  await draw();
  every(3_000, draw);
}

// ---------------------------------------------------------------- queues

async function disputesView(view) {
  const list = h("div", { id: "dispute-queue" });
  view.append(
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Dispute queue"),
      h("p", { class: "muted" }, "Orders in DISPUTED, oldest first. The resolution sends the arbiter's transaction once; the order follows the chain."),
      list,
    ),
  );
  let shown = "";
  const draw = async () => {
    const page = await api("GET", "/orders?status=DISPUTED&limit=100");
    await refreshBadges();
    const key = JSON.stringify(page.orders.map((order) => [order.id, order.dispute]));
    if (key === shown) return;
    shown = key;
    const orders = [...page.orders].reverse();
    if (orders.length === 0) return list.replaceChildren(h("p", { class: "muted" }, "No open disputes."));
    list.replaceChildren(
      ...orders.map((order) =>
        h(
          "article",
          { class: "card", "data-order-id": order.id },
          h("h3", {}, orderLink(order.id), ` · ${usdc(order.amount)} · ${mxn(order.totalMxn)} · ${order.partnerName} / ${order.partnerUserRef}`),
          h("p", {}, `Opened by ${order.dispute?.openedBy ?? "?"}. `, h("a", { href: `#/orders/${encodeURIComponent(order.id)}` }, "Inspect the order")),
          order.dispute?.resolutionRequest
            ? h("p", { class: "muted" }, `Resolution ${order.dispute.resolutionRequest.outcome} requested; waiting for the chain.`)
            : resolveForm(order, async () => {
                shown = "";
                await draw();
              }),
        ),
      ),
    );
  };
  await draw();
  every(5_000, draw);
}

function holdActions(order, onDone) {
  const note = h("input", { name: "note", placeholder: "Why (kept on the order's timeline)", maxlength: "2000" });
  const decide = (decision) =>
    h(
      "button",
      {
        type: "button",
        onclick: () => {
          if (!confirm(`${decision} the held order ${order.id}?`)) return;
          void act(async () => {
            await api("POST", `/orders/${encodeURIComponent(order.id)}/review`, { decision, note: note.value.trim() || undefined });
            notify(`Hold on ${order.id} decided: ${decision}.`);
            await onDone();
          });
        },
      },
      decision === "RELEASE" ? "Release to the buyer" : "Refund the seller",
    );
  return h("div", { class: "hold-actions", "data-order-id": order.id }, note, decide("RELEASE"), decide("REFUND"));
}

// Who paid beside who locked (decisions 8): the operator compares the two and decides.
function identityColumns(payment) {
  const column = (title, rows) =>
    h("div", { class: "identity" }, h("h4", {}, title), h("dl", { class: "kv" }, rows.flatMap(([label, value]) => [h("dt", {}, label), h("dd", {}, value ?? "—")])));
  return h(
    "div",
    { class: "identities" },
    column("Payer on the CEP", [
      ["Name", payment.payer.name],
      ["RFC / CURP", payment.payer.rfcOrCurp],
      ["Account", payment.payer.account],
      ["Bank", payment.payer.bank],
    ]),
    column("Buyer (verified by KYC)", [
      ["Name", payment.buyer.name],
      ["RFC", payment.buyer.rfc],
      ["CURP", payment.buyer.curp],
      ["Wallet", payment.buyer.wallet],
    ]),
  );
}

async function highRiskView(view) {
  const page = await api("GET", "/orders?amlRiskLevel=HIGH&limit=100");
  const held = await api("GET", "/orders?review=SANCTIONS_HOLD&limit=100");
  const thirdParty = await api("GET", "/orders?review=THIRD_PARTY_PAYMENT&limit=100");
  await refreshBadges();
  view.append(
    h(
      "section",
      { class: "card", id: "third-party-payment-queue" },
      h("h2", {}, "Third-party payments"),
      h(
        "p",
        { class: "muted" },
        "Orders paid from an account that is not the buyer's. No release is sent until you decide: Release if the account is the buyer's after all, " +
          "Refund if not (the seller returns the pesos to the payer). The escrow takes a release only until the time shown.",
      ),
      thirdParty.orders.length === 0
        ? h("p", { class: "muted" }, "No orders held.")
        : h(
            "div",
            {},
            ...thirdParty.orders.map((order) =>
              h(
                "article",
                { class: "card", "data-order-id": order.id },
                h("h3", {}, orderLink(order.id), ` · ${usdc(order.amount)} · ${mxn(order.totalMxn)} · ${order.partnerName} / ${order.partnerUserRef} · ${order.status}`),
                identityColumns(order.thirdPartyPayment),
                h("p", { class: "muted" }, `Compared by ${order.thirdPartyPayment.comparedBy}; release possible until ${order.thirdPartyPayment.releasePossibleUntil}.`),
                holdActions(order, () => route()),
              ),
            ),
          ),
    ),
  );
  view.append(
    h(
      "section",
      { class: "card", id: "sanctions-hold-queue" },
      h("h2", {}, "Sanctions holds"),
      h("p", { class: "muted" }, "Orders whose buyer (wallet, or KYC screening) or depositing seller wallet is sanctioned. Nothing is released or listed until you decide."),
      held.orders.length === 0
        ? h("p", { class: "muted" }, "No orders held.")
        : h(
            "div",
            {},
            ...held.orders.map((order) =>
              h(
                "article",
                { class: "card", "data-order-id": order.id },
                h("h3", {}, orderLink(order.id), ` · ${usdc(order.amount)} · ${order.partnerName} / ${order.partnerUserRef} · ${order.status}`),
                h(
                  "p",
                  {},
                  ...(order.sanctionsHold
                    ? [
                        `Buyer ${order.sanctionsHold.buyerWallet} (${order.sanctionsHold.listEntry ?? "listed"}); `,
                        order.sanctionsHold.paymentVerifiedAt ? `payment verified ${order.sanctionsHold.paymentVerifiedAt}.` : "no payment verified yet.",
                      ]
                    : [`Deposit from ${order.depositHold.sellerWallet} (${order.depositHold.listEntry ?? "listed"}): not listed. Release lists it; Refund returns the deposit.`]),
                ),
                holdActions(order, () => route()),
              ),
            ),
          ),
    ),
  );
  view.append(
    h(
      "section",
      { class: "card", id: "high-risk-queue" },
      h("h2", {}, "High-risk orders (AML score 70 and above)"),
      h("p", { class: "muted" }, "Newest first. Inspect an order to see its user, wallets, timeline and the partner; suspend a partner from Partners."),
      orderTable(page.orders, ["id", "partner", "user", "status", "amount", "total", "risk", "created"]),
    ),
  );
}

// ---------------------------------------------------------------- partners

function secretNotice(title, fields) {
  return h(
    "div",
    { class: "secret", id: "secret-notice" },
    h("strong", {}, title),
    h("p", {}, "Shown this once: copy it now."),
    h("dl", { class: "kv" }, Object.entries(fields).flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, h("code", { "data-secret": name }, value))])),
  );
}

async function partnersView(view) {
  const secrets = h("div", { id: "partner-secrets" });
  const field = (label, control) => h("div", {}, h("label", { for: control.id }, label), control);
  const name = h("input", { id: "partner-name", required: true });
  const tier = h("select", { id: "partner-tier" }, ["FREE", "GROWTH", "ENTERPRISE"].map((t) => h("option", { value: t }, t)));
  const kycModel = h("select", { id: "partner-kyc-model" }, ["PARTNER_MANAGED", "SERVICE_PROVIDED"].map((m) => h("option", { value: m }, m)));
  const webhookUrl = h("input", { id: "partner-webhook-url", placeholder: "https://…" });
  const feeWallet = h("input", { id: "partner-fee-wallet", placeholder: "0x…" });
  const table = h("div", { id: "partner-table" });

  const draw = async () => {
    const page = await api("GET", "/partners?limit=100");
    table.replaceChildren(
      h(
        "table",
        {},
        h("thead", {}, h("tr", {}, ["Name", "Id", "Tier", "Status", "KYB", "KYC model", "Key", "Webhook URL", "Actions"].map((title) => h("th", {}, title)))),
        h(
          "tbody",
          {},
          page.partners.map((partner) => {
            const patch = (changes, message) =>
              act(async () => {
                await api("PATCH", `/partners/${encodeURIComponent(partner.id)}`, changes);
                notify(message);
                await draw();
              });
            const tierSelect = h(
              "select",
              { "aria-label": `Tier of ${partner.name}`, onchange: (event) => patch({ tier: event.target.value }, `${partner.name} is now ${event.target.value}.`) },
              ["FREE", "GROWTH", "ENTERPRISE"].map((t) => h("option", { value: t, selected: t === partner.tier }, t)),
            );
            return h(
              "tr",
              { "data-partner-id": partner.id },
              h("td", {}, partner.name),
              h("td", {}, h("code", {}, partner.id)),
              h("td", {}, tierSelect),
              h("td", {}, statusTag(partner.status)),
              h("td", {}, statusTag(partner.kybStatus)),
              h("td", {}, partner.kycModel),
              h("td", {}, h("code", {}, `${partner.apiKeyPrefix}…`)),
              h("td", {}, partner.webhookUrl ?? "—"),
              h(
                "td",
                {},
                h(
                  "button",
                  { class: "secondary", onclick: () => patch({ status: partner.status === "ACTIVE" ? "INACTIVE" : "ACTIVE" }, `${partner.name} is now ${partner.status === "ACTIVE" ? "INACTIVE" : "ACTIVE"}.`) },
                  partner.status === "ACTIVE" ? "Deactivate" : "Activate",
                ),
                " ",
                h(
                  "button",
                  { class: "secondary", onclick: () => patch({ kybStatus: partner.kybStatus === "APPROVED" ? "SUSPENDED" : "APPROVED" }, `${partner.name}'s KYB is now ${partner.kybStatus === "APPROVED" ? "SUSPENDED" : "APPROVED"}.`) },
                  partner.kybStatus === "APPROVED" ? "Suspend" : "Approve KYB",
                ),
                " ",
                h(
                  "button",
                  {
                    class: "danger",
                    onclick: () => {
                      if (!confirm(`Issue a new API key for ${partner.name}? The current key stops working at once.`)) return;
                      void act(async () => {
                        const rotated = await api("POST", `/partners/${encodeURIComponent(partner.id)}/api-keys`);
                        secrets.replaceChildren(secretNotice(`New API key for ${partner.name}`, { apiKey: rotated.apiKey }));
                        await draw();
                      });
                    },
                  },
                  "Rotate key",
                ),
                " ",
                h("a", { href: `#/orders?partnerId=${encodeURIComponent(partner.id)}` }, "orders"),
                " · ",
                h("a", { href: `#/revenue?partnerId=${encodeURIComponent(partner.id)}` }, "revenue"),
                " · ",
                h("a", { href: `#/audit?partnerId=${encodeURIComponent(partner.id)}` }, "audit log"),
              ),
            );
          }),
        ),
      ),
    );
  };

  const form = h(
    "form",
    {
      class: "filters",
      id: "partner-create",
      onsubmit: (event) => {
        event.preventDefault();
        void act(async () => {
          const body = { name: name.value.trim(), tier: tier.value, kycModel: kycModel.value };
          if (webhookUrl.value.trim()) body.webhookUrl = webhookUrl.value.trim();
          if (feeWallet.value.trim()) body.feeWallet = feeWallet.value.trim();
          const created = await api("POST", "/partners", body);
          secrets.replaceChildren(secretNotice(`Partner ${created.name} created (${created.id})`, { apiKey: created.apiKey, webhookSecret: created.webhookSecret }));
          event.target.reset();
          await draw();
        });
      },
    },
    field("Name", name),
    field("Tier", tier),
    field("KYC model", kycModel),
    field("Webhook URL", webhookUrl),
    field("Fee wallet", feeWallet),
    h("button", { type: "submit" }, "Create partner"),
  );
  view.append(h("section", { class: "card" }, h("h2", {}, "New partner"), form, secrets), h("section", { class: "card" }, h("h2", {}, "Partners"), table));
  await draw();
}

// ---------------------------------------------------------------- deliveries

async function deliveriesView(view, params) {
  const status = h("select", { id: "delivery-status", name: "status" }, h("option", { value: "" }, "any"), ["PENDING", "DELIVERED", "FAILED"].map((s) => h("option", { value: s, selected: params.get("status") === s }, s)));
  const orderId = h("input", { id: "delivery-order", name: "orderId", value: params.get("orderId") ?? "", placeholder: "ord_…" });
  const partnerId = h("input", { id: "delivery-partner", name: "partnerId", value: params.get("partnerId") ?? "", placeholder: "ptn_…" });
  const table = h("div", { id: "delivery-table" });
  const query = new URLSearchParams(params);
  if (!query.has("limit")) query.set("limit", "50");
  const draw = async () => {
    const page = await api("GET", `/deliveries?${query}`);
    table.replaceChildren(deliveriesTable(page.deliveries, draw, true), h("p", { class: "muted" }, `${page.deliveries.length} of ${page.total}`));
  };
  const form = h(
    "form",
    {
      class: "filters",
      onsubmit: (event) => {
        event.preventDefault();
        const next = new URLSearchParams();
        for (const control of [status, orderId, partnerId]) if (control.value.trim()) next.set(control.name, control.value.trim());
        location.hash = `#/deliveries?${next}`;
      },
    },
    h("div", {}, h("label", { for: "delivery-status" }, "status"), status),
    h("div", {}, h("label", { for: "delivery-order" }, "orderId"), orderId),
    h("div", {}, h("label", { for: "delivery-partner" }, "partnerId"), partnerId),
    h("button", { type: "submit" }, "Filter"),
  );
  view.append(h("section", { class: "card" }, h("h2", {}, "Webhook deliveries (every partner)"), form, table));
  await draw();
}

// ---------------------------------------------------------------- revenue

async function revenueView(view, params) {
  const month = h("input", { id: "revenue-month", type: "month", value: params.get("month") ?? "" });
  const body = h("div", { id: "revenue-table" });
  const amount = (value) => [h("td", { class: "num" }, mxn(value.mxn)), h("td", { class: "num" }, usdc(value.usdc))];
  const draw = async () => {
    const report = await api("GET", `/revenue${month.value ? `?month=${month.value}` : ""}`);
    if (!month.value) month.value = report.month;
    const focus = params.get("partnerId");
    const rows = focus ? report.partners.filter((row) => row.partnerId === focus) : report.partners;
    body.replaceChildren(
      h("p", { class: "muted" }, `Orders completed in ${report.month} (${report.timeZone}). Fees are PARTNER fees; the service's share went to the treasury in the release.`),
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Partner", "Tier", "Completed", "Volume MXN", "Volume USDC", "Partner fees MXN", "USDC", "Service share MXN", "USDC", "Partner net MXN", "USDC"].map((title, index) => h("th", { class: index > 1 ? "num" : undefined }, title)),
          ),
        ),
        h(
          "tbody",
          {},
          rows.map((row) =>
            h("tr", { "data-partner-id": row.partnerId }, h("td", {}, row.name), h("td", {}, row.tier), h("td", { class: "num" }, String(row.completedOrders)), amount(row.volume), amount(row.partnerFees), amount(row.serviceShare), amount(row.partnerNet)),
          ),
          focus
            ? null
            : h(
                "tr",
                {},
                h("th", {}, "Total"),
                h("th", {}, ""),
                h("th", { class: "num" }, String(report.totals.completedOrders)),
                amount(report.totals.volume),
                amount(report.totals.partnerFees),
                amount(report.totals.serviceShare),
                amount(report.totals.partnerNet),
              ),
        ),
      ),
    );
  };
  view.append(
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Revenue"),
      h(
        "form",
        {
          class: "filters",
          onsubmit: (event) => {
            event.preventDefault();
            void act(draw);
          },
        },
        h("div", {}, h("label", { for: "revenue-month" }, "Month"), month),
        h("button", { type: "submit" }, "Show"),
      ),
      body,
    ),
  );
  await draw();
}

// ---------------------------------------------------------------- audit log

/** One partner's audit log: every change by its members (dashboard) or by operators (this console, the admin API). */
async function auditView(view, params) {
  const partnerId = params.get("partnerId") ?? "";
  const partner = await api("GET", `/partners/${encodeURIComponent(partnerId)}`);
  const page = await api("GET", `/partners/${encodeURIComponent(partnerId)}/audit-log?limit=100`);
  const details = (entry) =>
    Object.entries(entry.details ?? {})
      .map(([name, value]) => `${name}: ${JSON.stringify(value)}`)
      .join("; ") || "—";
  view.append(
    h(
      "section",
      { class: "card" },
      h("h2", {}, `Audit log of ${partner.name}`),
      h(
        "table",
        { id: "audit-table" },
        h("thead", {}, h("tr", {}, ["When", "What", "Who", "From", "Details"].map((title) => h("th", {}, title)))),
        h(
          "tbody",
          {},
          page.entries.map((entry) =>
            h(
              "tr",
              { "data-action": entry.action },
              h("td", {}, when(entry.at)),
              h("td", {}, h("code", {}, entry.action)),
              h("td", {}, entry.actor.type === "OPERATOR" ? "operator" : `${entry.actor.email} (member)`),
              h("td", {}, entry.address ?? "—"),
              h("td", {}, details(entry)),
            ),
          ),
        ),
      ),
      h("p", { class: "muted" }, `${page.total} entries`),
    ),
  );
}

// ---------------------------------------------------------------- routing

async function route() {
  if (!token()) return signOut();
  stopTimers();
  const view = document.getElementById("view");
  view.replaceChildren();
  const [path, query] = (location.hash.slice(1) || "/overview").split("?");
  const params = new URLSearchParams(query ?? "");
  const parts = path.split("/").filter(Boolean);
  const name = parts[0] ?? "overview";
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("active", link.dataset.view === name);
  try {
    if (name === "orders" && parts[1]) await orderView(view, decodeURIComponent(parts[1]));
    else if (name === "orders") await ordersView(view, params);
    else if (name === "disputes") await disputesView(view);
    else if (name === "high-risk") await highRiskView(view);
    else if (name === "partners") await partnersView(view);
    else if (name === "deliveries") await deliveriesView(view, params);
    else if (name === "revenue") await revenueView(view, params);
    else if (name === "audit") await auditView(view, params);
    else await overviewView(view);
    if (name !== "overview" && name !== "disputes" && name !== "high-risk") await refreshBadges();
  } catch (error) {
    if (error.status !== 401) view.replaceChildren(h("section", { class: "card error", role: "alert" }, error.message));
  }
}

document.getElementById("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  void signIn(input.value.trim());
  input.value = "";
});
document.getElementById("logout").addEventListener("click", () => signOut());
window.addEventListener("hashchange", () => void route());

if (token()) void signIn(token());
else signOut();
