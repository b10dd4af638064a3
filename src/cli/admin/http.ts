import { readFileSync } from "node:fs";
import path from "node:path";

// The admin command line talks to a running service over its admin API (decisions section 12), exactly
// like the operator console: it never opens the database itself.

export const DEFAULT_URL = "http://127.0.0.1:3000";
export const ADMIN_PREFIX = "/admin/v1";

/** A mistake on the command line: the command is not run, usage is shown, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The service answered with an error: its body is shown as it came, exit code 1. */
export class AdminApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    super(`The service answered HTTP ${status}`);
    this.name = "AdminApiError";
    this.status = status;
    this.body = body;
  }
}

export interface AdminConnection {
  /** The service's base URL, without the /admin/v1 prefix. */
  url: string;
  token: string;
}

export type Env = Record<string, string | undefined>;

/** The token `npm start` writes for the sandbox: `$DATA_DIR/sandbox.json`, field `adminToken`. */
function sandboxToken(env: Env, cwd: string): string | undefined {
  const file = path.resolve(cwd, env.DATA_DIR?.trim() || ".data", "sandbox.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${file} is not valid JSON`);
  }
  const token = (parsed as { adminToken?: unknown } | null)?.adminToken;
  return typeof token === "string" && token !== "" ? token : undefined;
}

/**
 * URL: `--url`, else OFFRAMP_URL, else http://127.0.0.1:3000. Token: `--token`, else ADMIN_TOKEN, else
 * the sandbox credentials file that `npm start` writes.
 */
export function resolveConnection(options: { url?: string | undefined; token?: string | undefined }, env: Env, cwd = process.cwd()): AdminConnection {
  const url = (options.url || env.OFFRAMP_URL?.trim() || DEFAULT_URL).replace(/\/+$/, "");
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url must be an absolute URL, got "${url}"`);
  }
  const token = options.token || env.ADMIN_TOKEN?.trim() || sandboxToken(env, cwd);
  if (!token) {
    throw new UsageError("No admin token: pass --token, set ADMIN_TOKEN, or start the sandbox with `npm start` (it writes .data/sandbox.json)");
  }
  return { url, token };
}

export interface AdminClient {
  readonly url: string;
  /** Calls `/admin/v1` + path; the parsed JSON body of a 2xx answer, else AdminApiError. */
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
}

export function createAdminClient(connection: AdminConnection, doFetch: typeof fetch = fetch): AdminClient {
  return {
    url: connection.url,
    async request<T>(method: string, requestPath: string, body?: unknown): Promise<T> {
      const headers: Record<string, string> = { Authorization: `Bearer ${connection.token}`, Accept: "application/json" };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      let response: Response;
      try {
        response = await doFetch(`${connection.url}${ADMIN_PREFIX}${requestPath}`, {
          method,
          headers,
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
      } catch (error) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        throw new Error(`Cannot reach the service at ${connection.url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, { cause: error });
      }
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text === "" ? null : JSON.parse(text);
      } catch {
        // not JSON: kept as text for the error output
      }
      if (!response.ok) throw new AdminApiError(response.status, parsed);
      return parsed as T;
    },
  };
}

/** `?limit=20&offset=40` from the given values, skipping undefined ones. */
export function queryString(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : "";
}
