import type { CommandGroup, OptionValues } from "./command.ts";
import { queryString, UsageError } from "./http.ts";

// `npm run admin -- partners ...`: the admin API's partner routes (decisions section 12).

const id = (args: string[]) => encodeURIComponent(args[0]!);

function text(options: OptionValues, name: string): string | undefined {
  const value = options[name];
  return typeof value === "string" ? value : undefined;
}

function required(options: OptionValues, name: string): string {
  const value = text(options, name);
  if (value === undefined || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value;
}

/** An empty value or `none` clears a nullable field. */
function nullable(options: OptionValues, name: string): string | null | undefined {
  const value = text(options, name);
  if (value === undefined) return undefined;
  return value.trim() === "" || value.trim().toLowerCase() === "none" ? null : value.trim();
}

/** `a,b` -> ["a", "b"]; an empty value is the empty list (allows every address). */
function list(options: OptionValues, name: string): string[] | undefined {
  const value = text(options, name);
  if (value === undefined) return undefined;
  return value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

function json(options: OptionValues, name: string): unknown {
  const value = text(options, name);
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch {
    throw new UsageError(`--${name} must be JSON, e.g. '{"requestsPerMinute":2000}'`);
  }
}

function integer(options: OptionValues, name: string): number | undefined {
  const value = text(options, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

/** Drops undefined fields so only what was given is sent. */
function given(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

const editable = {
  "webhook-url": { type: "string" },
  "ip-allow-list": { type: "string" },
  "fee-wallet": { type: "string" },
  limits: { type: "string" },
} as const;

export const partnerCommands: CommandGroup = {
  name: "partners",
  summary: "Create, list, show and change partners; rotate their API key and webhook secret",
  commands: [
    {
      name: "create",
      summary: "Create a partner; prints its apiKey and webhookSecret, shown this once",
      usage:
        "partners create --name <name> --tier FREE|GROWTH|ENTERPRISE --kyc-model PARTNER_MANAGED|SERVICE_PROVIDED " +
        "[--webhook-url <url>] [--ip-allow-list <a,b>] [--fee-wallet <0x...>] [--limits <json>]",
      options: { name: { type: "string" }, tier: { type: "string" }, "kyc-model": { type: "string" }, ...editable },
      run: ({ client, options }) =>
        client.request("POST", "/partners", {
          name: required(options, "name"),
          tier: required(options, "tier"),
          kycModel: required(options, "kyc-model"),
          ...given({
            webhookUrl: nullable(options, "webhook-url"),
            ipAllowList: list(options, "ip-allow-list"),
            feeWallet: nullable(options, "fee-wallet"),
            limits: json(options, "limits"),
          }),
        }),
    },
    {
      name: "list",
      summary: "List partners, newest first (never keys or secrets)",
      usage: "partners list [--limit <1-100>] [--offset <n>]",
      options: { limit: { type: "string" }, offset: { type: "string" } },
      run: ({ client, options }) => client.request("GET", `/partners${queryString({ limit: integer(options, "limit"), offset: integer(options, "offset") })}`),
    },
    {
      name: "get",
      summary: "Show one partner",
      usage: "partners get <id>",
      args: ["id"],
      run: ({ client, args }) => client.request("GET", `/partners/${id(args)}`),
    },
    {
      name: "update",
      summary: "Change a partner's status, KYB status, tier, name, webhook URL, allow-list, fee wallet or limits",
      usage:
        "partners update <id> [--status ACTIVE|INACTIVE] [--kyb-status APPROVED|SUSPENDED] [--tier <tier>] [--name <name>] " +
        "[--webhook-url <url>|''] [--ip-allow-list <a,b>|''] [--fee-wallet <0x...>|''] [--limits <json>]  ('' or none clears)",
      args: ["id"],
      options: { status: { type: "string" }, "kyb-status": { type: "string" }, tier: { type: "string" }, name: { type: "string" }, ...editable },
      run: ({ client, args, options }) => {
        const changes = given({
          name: text(options, "name"),
          status: text(options, "status"),
          kybStatus: text(options, "kyb-status"),
          tier: text(options, "tier"),
          webhookUrl: nullable(options, "webhook-url"),
          ipAllowList: list(options, "ip-allow-list"),
          feeWallet: nullable(options, "fee-wallet"),
          limits: json(options, "limits"),
        });
        if (Object.keys(changes).length === 0) throw new UsageError("Give at least one change, e.g. --status INACTIVE");
        return client.request("PATCH", `/partners/${id(args)}`, changes);
      },
    },
    {
      name: "rotate-key",
      summary: "Issue a new API key (printed once); the old one stops working at once",
      usage: "partners rotate-key <id>",
      args: ["id"],
      run: ({ client, args }) => client.request("POST", `/partners/${id(args)}/api-keys`),
    },
    {
      name: "webhook-secret",
      summary: "Issue a new webhook secret (printed once); deliveries are signed with it from now on",
      usage: "partners webhook-secret <id>",
      args: ["id"],
      run: ({ client, args }) => client.request("POST", `/partners/${id(args)}/webhook-secret`),
    },
  ],
};
