/* global document, window, location, confirm */
// The partner dashboard: a single page over /dashboard/v1 (decisions section 18). The session is an
// HttpOnly cookie the page never sees; the CSRF token comes with the sign-in answer (or GET /session after
// a reload) and is sent as X-CSRF-Token on every change. Views are chosen by the URL hash. Text from the
// API is always set as text, never as HTML. Change controls are only drawn for roles that may use them
// (the API refuses them anyway), and carry `data-change`.

import { act, ApiError, clearNotice, h, notify, statusTag, when } from "./page.js";
import { ORDER_EVENT_TYPES as EVENT_TYPES, ORDER_STATUSES } from "./orders.js";

const API = "/dashboard/v1";
const RANK = { VIEWER: 0, DEVELOPER: 1, OWNER: 2 };

let session = null; // { member, csrfToken }

// ---------------------------------------------------------------- plumbing

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && session) headers["X-CSRF-Token"] = session.csrfToken;
  const response = await fetch(`${API}${path}`, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (response.status === 401 && path !== "/session") {
    showLogin("Your session has ended. Sign in again.");
    throw new ApiError(401, parsed);
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

const can = (role) => session && RANK[session.member.role] >= RANK[role];
const number = (value, digits = 0) => Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
const mxn = (value) => (value === null || value === undefined ? "unlimited" : `${Number(value).toLocaleString("es-MX", { minimumFractionDigits: 2, maximumFractionDigits: 2 })} MXN`);
const usdc = (value) => `${Number(value).toLocaleString("en-US", { maximumFractionDigits: 6 })} USDC`;

/** A change control: only drawn for `role` and above. */
function changeButton(role, label, onclick, kind = "") {
  if (!can(role)) return null;
  return h("button", { type: "button", class: kind, "data-change": true, onclick: () => void act(onclick) }, label);
}

function secretNotice(title, name, value) {
  return h(
    "div",
    { class: "secret", id: "secret-notice" },
    h("strong", {}, title),
    h("p", {}, "Shown this once: copy it now. It is not stored anywhere you can read it again."),
    h("code", { "data-secret": name }, value),
  );
}

function card(title, ...children) {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}

// ---------------------------------------------------------------- sign-in

function showLogin(message) {
  session = null;
  document.getElementById("app").hidden = true;
  document.getElementById("invitation").hidden = true;
  document.getElementById("login").hidden = false;
  const error = document.getElementById("login-error");
  error.textContent = message ?? "";
  error.hidden = !message;
}

function startApp(signedIn) {
  session = signedIn;
  document.getElementById("login").hidden = true;
  document.getElementById("invitation").hidden = true;
  document.getElementById("app").hidden = false;
  document.getElementById("who").textContent = `${session.member.email} · ${session.member.role}`;
  void api("GET", "/partner").then((partner) => (document.getElementById("partner-name").textContent = partner.name), () => undefined);
  if (!location.hash || location.hash.startsWith("#/invitation/")) location.hash = "#/overview";
  else void route();
}

document.getElementById("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const email = document.getElementById("email");
  const password = document.getElementById("password");
  const submit = event.target.querySelector("button[type=submit]");
  // One attempt at a time: a slow refusal arriving after a later success would sign the page out again.
  if (submit.disabled) return;
  submit.disabled = true;
  void (async () => {
    try {
      const signedIn = await api("POST", "/session", { email: email.value.trim(), password: password.value });
      password.value = "";
      startApp(signedIn);
    } catch (error) {
      password.value = "";
      showLogin(error.body && error.body.error === "RATE_LIMITED" ? "Too many failed attempts. Try again later." : "The email or password is wrong.");
    } finally {
      submit.disabled = false;
    }
  })();
});

document.getElementById("invitation-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = location.hash.slice("#/invitation/".length);
  const password = document.getElementById("new-password");
  void (async () => {
    try {
      const signedIn = await api("POST", `/invitations/${encodeURIComponent(token)}`, { password: password.value });
      password.value = "";
      startApp(signedIn);
    } catch (error) {
      const message = document.getElementById("invitation-error");
      message.textContent =
        error.status === 410 ? "This invitation has expired: ask for a new one." : error.status === 404 ? "This invitation is unknown or was already used." : error.message;
      message.hidden = false;
    }
  })();
});

document.getElementById("logout").addEventListener("click", () => {
  void (async () => {
    try {
      await api("DELETE", "/session");
    } finally {
      location.hash = "";
      showLogin("Signed out.");
    }
  })();
});

// ---------------------------------------------------------------- overview

function meter(id, label, used, limit, format = (v) => number(v)) {
  const unlimited = limit === null || limit === undefined;
  const share = unlimited || limit === 0 ? 0 : Math.min(1, used / limit);
  const fill = h("div", { class: `fill${share >= 1 ? " full" : share >= 0.8 ? " high" : ""}` });
  // Sized through the CSSOM: allowed by the page's style-src 'self' (no inline style attribute).
  if (!unlimited) fill.style.width = `${(share * 100).toFixed(1)}%`;
  return h(
    "div",
    { class: "meter", "data-meter": id },
    h("div", { class: "label" }, h("strong", {}, label), h("span", { "data-usage": id }, unlimited ? `${format(used)} · unlimited` : `${format(used)} of ${format(limit)}`)),
    h("div", { class: `bar${unlimited ? " unlimited" : ""}`, role: "meter", "aria-valuenow": used, "aria-valuemax": unlimited ? undefined : limit, "aria-label": label }, fill),
  );
}

async function overviewView(view) {
  const [partner, usage] = await Promise.all([api("GET", "/partner"), api("GET", "/usage")]);
  document.getElementById("partner-name").textContent = partner.name;
  view.append(
    card(
      partner.name,
      h(
        "dl",
        { class: "kv", id: "partner-facts" },
        h("dt", {}, "Partner id"),
        h("dd", {}, h("code", {}, partner.id)),
        h("dt", {}, "Tier"),
        h("dd", { "data-field": "tier" }, partner.tier),
        h("dt", {}, "Status"),
        h("dd", {}, statusTag(partner.status), " ", statusTag(partner.kybStatus)),
        h("dt", {}, "KYC model"),
        h("dd", {}, partner.kycModel),
        h("dt", {}, "Fee wallet"),
        h("dd", {}, partner.feeWallet ? h("code", {}, partner.feeWallet) : "—"),
      ),
    ),
    card(
      "Limits and usage",
      h(
        "div",
        { class: "usage", id: "usage" },
        meter("requests", "API requests this minute", usage.requests.used, usage.requests.limit),
        meter("users", "Users", usage.users.count, usage.users.limit),
        meter("day", "Volume today", usage.volume.dayMxn, usage.volume.dailyLimitMxn, mxn),
        meter("month", "Volume this month", usage.volume.monthMxn, usage.volume.monthlyLimitMxn, mxn),
        meter("kyc", `KYC sessions this month (${usage.kyc.included} included)`, usage.kyc.sessionsThisMonth, usage.kyc.cap),
      ),
      h("p", { class: "muted" }, `The request window resets at ${new Date(usage.requests.resetsAt).toLocaleTimeString()}. Volume periods are Mexico City days and months.`),
    ),
    card(
      "This month's fees",
      h(
        "dl",
        { class: "kv", id: "revenue" },
        h("dt", {}, "KYC billed"),
        h("dd", {}, `${number(usage.kyc.billedUsd, 2)} USD`),
        h("dt", {}, "Fees collected"),
        h("dd", {}, usdc(usage.revenue.feesCollectedUsdc)),
        h("dt", {}, "Service's share"),
        h("dd", {}, usdc(usage.revenue.serviceShareUsdc)),
        h("dt", {}, "Owed to you"),
        h("dd", {}, usdc(usage.revenue.owedToPartnerUsdc)),
      ),
    ),
  );
}

// ---------------------------------------------------------------- API key

async function apiKeyView(view) {
  const partner = await api("GET", "/partner");
  const secret = h("div", { id: "key-secret" });
  const prefix = h("code", { id: "key-prefix" }, `${partner.apiKeyPrefix}…`);
  view.append(
    card(
      "API key",
      h("p", {}, "Your partner API key starts with ", prefix, ". Only its hash is kept: a new key is shown once, and the current key stops working the moment it is issued."),
      h(
        "div",
        { class: "row-actions" },
        changeButton(
          "DEVELOPER",
          "Rotate API key",
          async () => {
            if (!confirm("Issue a new API key? The current key stops working at once.")) return;
            const rotated = await api("POST", "/api-keys");
            secret.replaceChildren(secretNotice("New API key", "apiKey", rotated.apiKey));
            prefix.textContent = `${rotated.apiKey.slice(0, 13)}…`;
            notify("A new API key was issued; the old one no longer works.");
          },
          "danger",
        ),
      ),
      secret,
    ),
  );
}

// ---------------------------------------------------------------- webhook

async function webhookView(view, params) {
  const partner = await api("GET", "/partner");
  const url = h("input", { id: "webhook-url", type: "url", value: partner.webhookUrl ?? "", placeholder: "https://…", size: 60, readonly: !can("DEVELOPER") });
  const secret = h("div", { id: "webhook-secret" });
  const outcome = h("div", { id: "test-outcome", class: "outcome" });
  const settings = card(
    "Webhook",
    h(
      "form",
      {
        class: "filters",
        id: "webhook-form",
        onsubmit: (event) => {
          event.preventDefault();
          void act(async () => {
            const value = url.value.trim();
            await api("PUT", "/webhook", { url: value === "" ? null : value });
            notify(value ? `Webhook URL set to ${value}.` : "Webhook URL removed.");
          });
        },
      },
      h("div", {}, h("label", { for: "webhook-url" }, "URL"), url),
      can("DEVELOPER") ? h("button", { type: "submit", "data-change": true }, "Save URL") : null,
    ),
    h(
      "div",
      { class: "row-actions" },
      changeButton("DEVELOPER", "Send test event", async () => {
        outcome.replaceChildren(h("span", { class: "muted" }, "Sending…"));
        const result = await api("POST", "/webhook/test");
        outcome.replaceChildren(
          h(
            "dl",
            { class: "kv", "data-delivered": String(result.delivered) },
            h("dt", {}, "Delivered"),
            h("dd", {}, result.delivered ? statusTag("DELIVERED") : statusTag("FAILED")),
            h("dt", {}, "Response code"),
            h("dd", { "data-field": "statusCode" }, result.statusCode ?? "no response"),
            h("dt", {}, "Duration"),
            h("dd", {}, `${result.durationMs} ms`),
            h("dt", {}, "Error"),
            h("dd", {}, result.error ?? "—"),
          ),
        );
      }, "secondary"),
      changeButton(
        "DEVELOPER",
        "Rotate webhook secret",
        async () => {
          if (!confirm("Issue a new webhook secret? Every delivery attempt from now on is signed with it.")) return;
          const rotated = await api("POST", "/webhook-secret");
          secret.replaceChildren(secretNotice("New webhook secret", "webhookSecret", rotated.webhookSecret));
        },
        "danger",
      ),
    ),
    outcome,
    secret,
  );

  const status = h("select", { id: "delivery-status" }, h("option", { value: "" }, "any"), ["PENDING", "DELIVERED", "FAILED"].map((s) => h("option", { value: s, selected: params.get("status") === s }, s)));
  const eventType = h("select", { id: "delivery-event" }, h("option", { value: "" }, "any"), EVENT_TYPES.map((e) => h("option", { value: e, selected: params.get("eventType") === e }, e)));
  const orderId = h("input", { id: "delivery-order", value: params.get("orderId") ?? "", placeholder: "ord_…" });
  const filters = h(
    "form",
    {
      class: "filters",
      id: "delivery-filters",
      onsubmit: (event) => {
        event.preventDefault();
        const query = new URLSearchParams();
        if (status.value) query.set("status", status.value);
        if (eventType.value) query.set("eventType", eventType.value);
        if (orderId.value.trim()) query.set("orderId", orderId.value.trim());
        location.hash = `#/webhook?${query}`;
      },
    },
    h("div", {}, h("label", { for: "delivery-status" }, "Status"), status),
    h("div", {}, h("label", { for: "delivery-event" }, "Event"), eventType),
    h("div", {}, h("label", { for: "delivery-order" }, "Order"), orderId),
    h("button", { type: "submit", class: "secondary" }, "Filter"),
  );
  const query = new URLSearchParams(params);
  if (!query.has("limit")) query.set("limit", "50");
  const page = await api("GET", `/deliveries?${query}`);
  const rows = page.deliveries.flatMap((delivery) => {
    const detail = h("tr", { class: "attempts", hidden: true, "data-attempts-of": delivery.id }, h("td", { colspan: 8 }));
    const toggle = async () => {
      if (!detail.hidden) {
        detail.hidden = true;
        return;
      }
      const full = await api("GET", `/deliveries/${encodeURIComponent(delivery.id)}`);
      detail.firstChild.replaceChildren(
        full.attempts.length === 0
          ? h("span", { class: "muted" }, "No attempt yet.")
          : h(
              "table",
              {},
              h("thead", {}, h("tr", {}, ["Series", "Attempt", "Started", "Response code", "Duration", "Error"].map((t) => h("th", {}, t)))),
              h(
                "tbody",
                {},
                full.attempts.map((attempt) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, attempt.series),
                    h("td", {}, attempt.attempt),
                    h("td", {}, when(attempt.startedAt)),
                    h("td", { "data-field": "statusCode" }, attempt.statusCode ?? "—"),
                    h("td", { class: "num" }, `${attempt.durationMs} ms`),
                    h("td", {}, attempt.error ?? "—"),
                  ),
                ),
              ),
            ),
      );
      detail.hidden = false;
    };
    return [
      h(
        "tr",
        { "data-delivery-id": delivery.id },
        h("td", {}, h("code", {}, delivery.id)),
        h("td", {}, delivery.eventType),
        h("td", {}, h("a", { href: `#/orders/${encodeURIComponent(delivery.orderId)}` }, delivery.orderId)),
        h("td", {}, statusTag(delivery.status)),
        h("td", { class: "num" }, `${delivery.attempts}/${delivery.maxAttempts}`),
        h("td", {}, when(delivery.lastAttemptAt)),
        h("td", {}, delivery.errorMessage ?? "—"),
        h(
          "td",
          {},
          h(
            "div",
            { class: "row-actions" },
            h("button", { type: "button", class: "secondary", onclick: () => void act(toggle) }, "Attempts"),
            changeButton("DEVELOPER", "Redeliver", async () => {
              await api("POST", `/deliveries/${encodeURIComponent(delivery.id)}/redeliver`);
              notify(`Delivery ${delivery.id} is being sent again.`);
              await route();
            }),
          ),
        ),
      ),
      detail,
    ];
  });
  view.append(
    settings,
    card(
      "Delivery log",
      filters,
      h(
        "table",
        { id: "delivery-table" },
        h("thead", {}, h("tr", {}, ["Delivery", "Event", "Order", "Status", "Attempts", "Last attempt", "Error", ""].map((t) => h("th", {}, t)))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No deliveries."))),
      ),
      h("p", { class: "muted" }, `${page.total} deliveries`),
    ),
  );
}

// ---------------------------------------------------------------- IP allow-list

async function ipAllowListView(view) {
  const partner = await api("GET", "/partner");
  const entries = h("textarea", { id: "allow-list", rows: 6, readonly: !can("OWNER"), placeholder: "one address or CIDR range per line; empty allows every address" });
  entries.value = partner.ipAllowList.join("\n");
  view.append(
    card(
      "IP allow-list",
      h("p", {}, "Requests with your API key are accepted only from these addresses and ranges (IPv4 and IPv6). An empty list allows every address. The dashboard itself is not restricted."),
      h(
        "ul",
        { id: "allow-list-current" },
        partner.ipAllowList.length ? partner.ipAllowList.map((entry) => h("li", {}, h("code", {}, entry))) : h("li", { class: "muted" }, "Every address is allowed."),
      ),
      entries,
      h(
        "div",
        { class: "row-actions" },
        changeButton("OWNER", "Save allow-list", async () => {
          const list = entries.value.split(/[\s,]+/).map((entry) => entry.trim()).filter(Boolean);
          await api("PUT", "/ip-allow-list", { entries: list });
          notify(list.length ? `The API key is now accepted only from ${list.join(", ")}.` : "The API key is accepted from every address.");
          await route();
        }),
      ),
    ),
  );
}

// ---------------------------------------------------------------- orders

async function ordersView(view, params) {
  const status = h("select", { id: "order-status" }, h("option", { value: "" }, "any"), ORDER_STATUSES.map((s) => h("option", { value: s, selected: params.get("status") === s }, s)));
  const ref = h("input", { id: "order-user", value: params.get("partnerUserRef") ?? "", placeholder: "partnerUserRef" });
  const filters = h(
    "form",
    {
      class: "filters",
      onsubmit: (event) => {
        event.preventDefault();
        const query = new URLSearchParams();
        if (status.value) query.set("status", status.value);
        if (ref.value.trim()) query.set("partnerUserRef", ref.value.trim());
        location.hash = `#/orders?${query}`;
      },
    },
    h("div", {}, h("label", { for: "order-status" }, "Status"), status),
    h("div", {}, h("label", { for: "order-user" }, "User"), ref),
    h("button", { type: "submit", class: "secondary" }, "Filter"),
  );
  const query = new URLSearchParams(params);
  if (!query.has("limit")) query.set("limit", "50");
  const page = await api("GET", `/orders?${query}`);
  view.append(
    card(
      "Orders",
      filters,
      h(
        "table",
        { id: "order-table" },
        h("thead", {}, h("tr", {}, ["Order", "Status", "User", "Amount", "Total", "AML", "Created"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          page.orders.length
            ? page.orders.map((order) =>
                h(
                  "tr",
                  { "data-order-id": order.id },
                  h("td", {}, h("a", { href: `#/orders/${encodeURIComponent(order.id)}` }, order.id)),
                  h("td", {}, statusTag(order.status)),
                  h("td", {}, order.partnerUserRef),
                  h("td", { class: "num" }, usdc(order.amount)),
                  h("td", { class: "num" }, mxn(order.totalMxn)),
                  h("td", {}, order.amlRiskLevel),
                  h("td", {}, when(order.createdAt)),
                ),
              )
            : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No orders.")),
        ),
      ),
      h("p", { class: "muted" }, `${page.total} orders`),
    ),
  );
}

async function orderView(view, id) {
  const order = await api("GET", `/orders/${encodeURIComponent(id)}`);
  const facts = [
    ["Status", statusTag(order.status)],
    ["User", order.partnerUserRef],
    ["Amount", usdc(order.amount)],
    ["Total", mxn(order.totalMxn)],
    ["Rate", order.fxRateUsdMxn],
    ["Bank", `${order.bankAccount.bankName} · ${order.bankAccount.clabe}`],
    ["Escrow", order.escrowTxHash ? h("code", {}, order.escrowTxHash) : order.escrowStatus],
    ["Buyer wallet", order.buyerWallet ? h("code", {}, order.buyerWallet) : "—"],
    ["CEP", order.cepTrackingKey ?? "—"],
    ["Created", when(order.createdAt)],
    ["Expires", when(order.expiresAt)],
  ];
  view.append(
    card(
      `Order ${order.id}`,
      h("p", {}, h("a", { href: "#/orders" }, "← all orders")),
      h("dl", { class: "kv" }, facts.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
    ),
    card(
      "Timeline",
      h(
        "ol",
        { class: "timeline", id: "timeline" },
        order.timeline.map((entry) =>
          h("li", { "data-event": entry.event }, h("span", {}, when(entry.timestamp)), h("strong", {}, entry.event), h("code", {}, Object.keys(entry.data).length ? JSON.stringify(entry.data) : "")),
        ),
      ),
    ),
  );
}

// ---------------------------------------------------------------- members

async function membersView(view) {
  const { members } = await api("GET", "/members");
  const invitation = h("div", { id: "invitation-link" });
  const email = h("input", { id: "invite-email", type: "email", required: true, placeholder: "name@company.com" });
  const role = h("select", { id: "invite-role" }, ["VIEWER", "DEVELOPER", "OWNER"].map((r) => h("option", { value: r }, r)));
  const invite = can("OWNER")
    ? card(
        "Invite a member",
        h(
          "form",
          {
            class: "filters",
            id: "invite-form",
            onsubmit: (event) => {
              event.preventDefault();
              void act(async () => {
                const created = await api("POST", "/members", { email: email.value.trim(), role: role.value });
                invitation.replaceChildren(secretNotice(`Invitation for ${created.email} (${created.role}), valid 72 hours: send them this link`, "inviteUrl", created.inviteUrl));
                event.target.reset();
                await drawTable();
              });
            },
          },
          h("div", {}, h("label", { for: "invite-email" }, "Email"), email),
          h("div", {}, h("label", { for: "invite-role" }, "Role"), role),
          h("button", { type: "submit", "data-change": true }, "Invite"),
        ),
        invitation,
      )
    : null;
  const table = h("div", { id: "member-table" });
  const drawTable = async (list) => {
    const rows = list ?? (await api("GET", "/members")).members;
    table.replaceChildren(
      h(
        "table",
        {},
        h("thead", {}, h("tr", {}, ["Email", "Role", "Status", "Invited", "Joined", ""].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          rows.map((member) =>
            h(
              "tr",
              { "data-member-id": member.id },
              h("td", {}, member.email, member.id === session.member.id ? h("span", { class: "muted" }, " (you)") : null),
              h(
                "td",
                {},
                can("OWNER")
                  ? h(
                      "select",
                      {
                        "data-change": true,
                        "aria-label": `Role of ${member.email}`,
                        // Redrawn either way: a refused change (LAST_OWNER) puts the select back.
                        onchange: (event) =>
                          void act(async () => {
                            await api("PATCH", `/members/${encodeURIComponent(member.id)}`, { role: event.target.value });
                            notify(`${member.email} is now ${event.target.value}.`);
                          }).then(() => drawTable()),
                      },
                      ["OWNER", "DEVELOPER", "VIEWER"].map((r) => h("option", { value: r, selected: r === member.role }, r)),
                    )
                  : member.role,
              ),
              h("td", {}, statusTag(member.status)),
              h("td", {}, when(member.createdAt)),
              h("td", {}, when(member.acceptedAt)),
              h(
                "td",
                {},
                changeButton(
                  "OWNER",
                  "Remove",
                  async () => {
                    if (!confirm(`Remove ${member.email}? Their sessions end at once.`)) return;
                    await api("DELETE", `/members/${encodeURIComponent(member.id)}`);
                    notify(`${member.email} was removed.`);
                    await drawTable();
                  },
                  "danger",
                ),
              ),
            ),
          ),
        ),
      ),
    );
  };
  await drawTable(members);
  view.append(card("Members", table), invite);
}

// ---------------------------------------------------------------- audit log

function describeDetails(details) {
  const parts = [];
  for (const [name, value] of Object.entries(details ?? {})) {
    if (name === "changes" && value && typeof value === "object") {
      for (const [field, changed] of Object.entries(value)) parts.push(`${field} = ${JSON.stringify(changed)}`);
    } else parts.push(`${name}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  return parts.join("; ") || "—";
}

async function auditLogView(view, params) {
  const offset = Number(params.get("offset") ?? 0);
  const page = await api("GET", `/audit-log?limit=50&offset=${offset}`);
  view.append(
    card(
      "Audit log",
      h("p", { class: "muted" }, "Every change to your account, made here by your members or by the service's operators."),
      h(
        "table",
        { id: "audit-table" },
        h("thead", {}, h("tr", {}, ["When", "What", "Who", "From", "Details"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          page.entries.length
            ? page.entries.map((entry) =>
                h(
                  "tr",
                  { "data-action": entry.action },
                  h("td", {}, when(entry.at)),
                  h("td", {}, h("code", {}, entry.action)),
                  h("td", {}, entry.actor.type === "OPERATOR" ? "Offramp operator" : (entry.actor.email ?? entry.actor.id)),
                  h("td", {}, entry.address ?? "—"),
                  h("td", {}, describeDetails(entry.details)),
                ),
              )
            : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "Nothing yet.")),
        ),
      ),
      h(
        "p",
        { class: "row-actions" },
        offset > 0 ? h("a", { href: `#/audit-log?offset=${Math.max(0, offset - 50)}` }, "← newer") : null,
        page.hasMore ? h("a", { href: `#/audit-log?offset=${offset + 50}` }, "older →") : null,
        h("span", { class: "muted" }, `${page.total} entries`),
      ),
    ),
  );
}

// ---------------------------------------------------------------- routing

let routeSerial = 0;

/**
 * Draws the view of the URL hash. It is drawn off-page and swapped in whole, and only by the latest call:
 * two navigations in quick succession never mix their content.
 */
async function route() {
  if (!session) return;
  const serial = ++routeSerial;
  const shown = document.getElementById("view");
  delete shown.dataset.ready;
  const view = document.createElement("div");
  const [path, query] = (location.hash.slice(1) || "/overview").split("?");
  const params = new URLSearchParams(query ?? "");
  const parts = path.split("/").filter(Boolean);
  const name = parts[0] ?? "overview";
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("active", link.dataset.view === name);
  try {
    if (name === "api-key") await apiKeyView(view);
    else if (name === "webhook") await webhookView(view, params);
    else if (name === "ip-allow-list") await ipAllowListView(view);
    else if (name === "orders" && parts[1]) await orderView(view, decodeURIComponent(parts[1]));
    else if (name === "orders") await ordersView(view, params);
    else if (name === "members") await membersView(view);
    else if (name === "audit-log") await auditLogView(view, params);
    else await overviewView(view);
    if (serial !== routeSerial) return;
    shown.replaceChildren(...view.childNodes);
    shown.dataset.ready = name;
  } catch (error) {
    if (serial === routeSerial && error.status !== 401) shown.replaceChildren(h("section", { class: "card error", role: "alert" }, error.message));
  }
}

window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#/invitation/")) return void showInvitation();
  clearNotice();
  if (session) void route();
});

function showInvitation() {
  session = null;
  document.getElementById("app").hidden = true;
  document.getElementById("login").hidden = true;
  document.getElementById("invitation").hidden = false;
}

// On load: an invitation link, else the session this browser already has (the cookie), else sign-in.
if (location.hash.startsWith("#/invitation/")) showInvitation();
else {
  void (async () => {
    try {
      startApp(await api("GET", "/session"));
    } catch {
      showLogin();
    }
  })();
}
