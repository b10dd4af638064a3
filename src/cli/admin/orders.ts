import type { CommandGroup, OptionValues } from "./command.ts";
import { queryString, UsageError } from "./http.ts";

// `npm run admin -- orders|deliveries|stats|machine|revenue ...`: the admin API's operator routes
// (decisions section 12), the same operations the console at /admin offers.

const OUTCOMES = ["BUYER", "SELLER", "NO_FAULT_RELEASE", "NO_FAULT_REFUND", "NO_FAULT_RETRY"];

const id = (args: string[]) => encodeURIComponent(args[0]!);

function text(options: OptionValues, name: string): string | undefined {
  const value = options[name];
  return typeof value === "string" ? value : undefined;
}

function integer(options: OptionValues, name: string): number | undefined {
  const value = text(options, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

const paging = { limit: { type: "string" }, offset: { type: "string" } } as const;

export const orderCommands: CommandGroup = {
  name: "orders",
  summary: "Every partner's orders; one order in full; resolve a dispute; decide a sanctions hold",
  commands: [
    {
      name: "list",
      summary: "List orders of every partner, newest first",
      usage:
        "orders list [--status <status>] [--partner <partner id>] [--user-ref <partnerUserRef>] [--aml-risk LOW|MEDIUM|HIGH] [--review SANCTIONS_HOLD|THIRD_PARTY_PAYMENT] [--limit <1-100>] [--offset <n>]",
      options: { status: { type: "string" }, partner: { type: "string" }, "user-ref": { type: "string" }, "aml-risk": { type: "string" }, review: { type: "string" }, ...paging },
      run: ({ client, options }) =>
        client.request(
          "GET",
          `/orders${queryString({
            status: text(options, "status"),
            partnerId: text(options, "partner"),
            partnerUserRef: text(options, "user-ref"),
            amlRiskLevel: text(options, "aml-risk"),
            review: text(options, "review"),
            limit: integer(options, "limit"),
            offset: integer(options, "offset"),
          })}`,
        ),
    },
    {
      name: "get",
      summary: "Show one order: detail, machine snapshot, path through the chart, deliveries, chain transactions, reputation",
      usage: "orders get <id>",
      args: ["id"],
      run: ({ client, args }) => client.request("GET", `/orders/${id(args)}`),
    },
    {
      name: "resolve",
      summary: "Resolve a DISPUTED order: the arbiter's transaction is sent once; the order follows the chain",
      usage: `orders resolve <id> --outcome ${OUTCOMES.join("|")} [--note <text>]`,
      args: ["id"],
      options: { outcome: { type: "string" }, note: { type: "string" } },
      run: ({ client, args, options }) => {
        const outcome = text(options, "outcome");
        if (!outcome) throw new UsageError(`--outcome is required: ${OUTCOMES.join(", ")}`);
        const note = text(options, "note");
        return client.request("POST", `/orders/${id(args)}/resolve`, note === undefined ? { outcome } : { outcome, note });
      },
    },
    {
      name: "review",
      summary: "Decide a sanctions hold (docs/aml.md): RELEASE sends the held release, REFUND lets the lock-expiry refund run",
      usage: "orders review <id> --decision RELEASE|REFUND [--note <text>]",
      args: ["id"],
      options: { decision: { type: "string" }, note: { type: "string" } },
      run: ({ client, args, options }) => {
        const decision = text(options, "decision");
        if (!decision) throw new UsageError("--decision is required: RELEASE, REFUND");
        const note = text(options, "note");
        return client.request("POST", `/orders/${id(args)}/review`, note === undefined ? { decision } : { decision, note });
      },
    },
  ],
};

export const deliveryCommands: CommandGroup = {
  name: "deliveries",
  summary: "Webhook deliveries of every partner; send one again",
  commands: [
    {
      name: "list",
      summary: "List deliveries, newest first",
      usage: "deliveries list [--status PENDING|DELIVERED|FAILED] [--order <order id>] [--partner <partner id>] [--event-type <type>] [--limit <1-100>] [--offset <n>]",
      options: { status: { type: "string" }, order: { type: "string" }, partner: { type: "string" }, "event-type": { type: "string" }, ...paging },
      run: ({ client, options }) =>
        client.request(
          "GET",
          `/deliveries${queryString({
            status: text(options, "status"),
            orderId: text(options, "order"),
            partnerId: text(options, "partner"),
            eventType: text(options, "event-type"),
            limit: integer(options, "limit"),
            offset: integer(options, "offset"),
          })}`,
        ),
    },
    {
      name: "get",
      summary: "Show one delivery with its payload and every attempt",
      usage: "deliveries get <id>",
      args: ["id"],
      run: ({ client, args }) => client.request("GET", `/deliveries/${id(args)}`),
    },
    {
      name: "redeliver",
      summary: "Send a delivery again: a new attempt series with the same id and body",
      usage: "deliveries redeliver <id>",
      args: ["id"],
      run: ({ client, args }) => client.request("POST", `/deliveries/${id(args)}/redeliver`),
    },
  ],
};

export const statsCommands: CommandGroup = {
  name: "stats",
  summary: "Orders per state, deliveries per status, queue sizes",
  defaultCommand: "show",
  commands: [{ name: "show", summary: "Orders per state, deliveries per status, queue sizes", usage: "stats", run: ({ client }) => client.request("GET", "/stats") }],
};

export const machineCommands: CommandGroup = {
  name: "machine",
  summary: "The order state machine's definition",
  defaultCommand: "show",
  commands: [{ name: "show", summary: "The order state machine's definition (states, transitions, XState definition)", usage: "machine", run: ({ client }) => client.request("GET", "/machine") }],
};

export const revenueCommands: CommandGroup = {
  name: "revenue",
  summary: "Completed volume, partner fees and the service's revenue share for a month",
  defaultCommand: "show",
  commands: [
    {
      name: "show",
      summary: "Every partner's month, or one partner's with --partner (month: YYYY-MM in Mexico City; default the current one)",
      usage: "revenue [--month YYYY-MM] [--partner <partner id>]",
      options: { month: { type: "string" }, partner: { type: "string" } },
      run: ({ client, options }) => {
        const month = queryString({ month: text(options, "month") });
        const partner = text(options, "partner");
        return client.request("GET", partner ? `/partners/${encodeURIComponent(partner)}/revenue${month}` : `/revenue${month}`);
      },
    },
  ],
};
