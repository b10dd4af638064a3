import { loadConfig, type Config } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { startService, type RunningService, type ServiceOptions } from "../../src/main.ts";
import { createServer } from "node:net";
import { createTestDatabase } from "./database.ts";
// Every API answer a test gets is checked against the served OpenAPI document (decisions section 20).
import { forgetDocuments } from "./openapi-check.ts";
import { ADMIN_TOKEN } from "./constants.ts";

export { ADMIN_TOKEN } from "./constants.ts";

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestService extends RunningService {
  config: Config;
  /** The service's database (pass it to `startTestService` to run a second instance on it). */
  databaseUrl: string;
  /** Calls the partner API (`/api/v1` + path) with the given key. */
  api<T = Record<string, unknown>>(method: string, path: string, options?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
  /** Calls the admin API (`/admin/v1` + path) with the admin token. */
  admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>>;
  /** Creates a partner through the admin API and returns its credentials. */
  createPartner(fields?: Record<string, unknown>): Promise<{ id: string; apiKey: string; webhookSecret: string }>;
  close(): Promise<void>;
}

/**
 * Where a test service logs when TEST_LOG_LEVEL is not set: its error records only, the last few kept in
 * memory. A 500 INTERNAL_ERROR is never meant to happen outside the tests that provoke one, and its body
 * says nothing; the test process then prints what the service logged (the error and its stack), so a 500
 * seen once under load in CI says why.
 */
function recentErrors(keep = 10) {
  const records: string[] = [];
  return {
    stream: { write: (line: string) => void (records.push(line) > keep && records.shift()) },
    take: () => records.splice(0).join(""),
  };
}

async function call<T>(url: string, method: string, headers: Record<string, string>, body?: string): Promise<ApiResponse<T>> {
  const response = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // non-JSON bodies (metrics, docs) stay text
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/**
 * The whole service on a fresh database, on a free port, with sandbox simulators; env overrides config.
 * With `options.databaseUrl` it is another instance on that database (which it then leaves in place).
 */
export async function startTestService(
  env: Record<string, string> = {},
  options: { databaseUrl?: string } & Pick<ServiceOptions, "chain" | "indexerSchema" | "clock"> = {},
): Promise<TestService> {
  const database = options.databaseUrl
    ? { url: options.databaseUrl, drop: async () => undefined }
    : await createTestDatabase();
  const config = loadConfig({ SANDBOX: "true", PORT: "0", LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "error", ...env });
  const logsToStdout = process.env.TEST_LOG_LEVEL !== undefined;
  const errors = recentErrors();
  const reportInternalError = <T>(method: string, path: string, response: ApiResponse<T>) => {
    if (response.status === 500) console.error(`test service: ${method} ${path} answered 500; ${logsToStdout ? "its error is in the service's log" : `the service logged:\n${errors.take()}`}`);
    return response;
  };
  const service = await startService({
    config,
    databaseUrl: database.url,
    adminToken: ADMIN_TOKEN,
    logger: createLogger(config.logLevel, logsToStdout ? undefined : errors.stream),
    ...(options.chain ? { chain: options.chain } : {}),
    ...(options.indexerSchema ? { indexerSchema: options.indexerSchema } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const test: TestService = {
    ...service,
    config,
    databaseUrl: database.url,
    async api<T>(method: string, path: string, options: Parameters<TestService["api"]>[2] = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key !== undefined) headers["X-API-Key"] = options.key;
      let body: string | undefined;
      if (options.rawBody !== undefined) body = options.rawBody;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === "content-type")) headers["Content-Type"] = "application/json";
      return reportInternalError(method, path, await call<T>(`${service.baseUrl}/api/v1${path}`, method, headers, body));
    },
    async admin<T>(method: string, path: string, body?: unknown) {
      const headers: Record<string, string> = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      return reportInternalError(method, path, await call<T>(`${service.baseUrl}/admin/v1${path}`, method, headers, body === undefined ? undefined : JSON.stringify(body)));
    },
    async createPartner(fields = {}) {
      const response = await test.admin<{ id: string; apiKey: string; webhookSecret: string }>("POST", "/partners", {
        name: "Test Partner",
        tier: "GROWTH",
        kycModel: "PARTNER_MANAGED",
        ...fields,
      });
      if (response.status !== 201) throw new Error(`partner creation failed: ${JSON.stringify(response.body)}`);
      return response.body;
    },
    async close() {
      forgetDocuments(service.baseUrl);
      await service.stop();
      await database.drop();
    },
  };
  return test;
}

/** A local port nothing listens on: an outside service configured there is unreachable. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The service outside sandbox (SANDBOX=false) with a complete production configuration whose chain and
 * outside services are addresses where nothing listens: for what production mode changes in the API.
 */
export async function startProductionModeService(): Promise<TestService> {
  const unreachable = `http://127.0.0.1:${await closedPort()}`;
  return startTestService({
    SANDBOX: "false",
    // Required by the configuration; the test database is passed to the service beside it.
    DATABASE_URL: "postgres://unused@127.0.0.1:5432/unused",
    RPC_URL: unreachable,
    ESCROW_ADDRESS: `0x${"1".repeat(40)}`,
    USDC_ADDRESS: `0x${"2".repeat(40)}`,
    SERVICE_PRIVATE_KEY: `0x${"3".repeat(64)}`,
    ARBITER_PRIVATE_KEY: `0x${"4".repeat(64)}`,
    ADMIN_ADDRESS: `0x${"5".repeat(40)}`,
    ADMIN_TOKEN: "production-admin-token-0123456789-abcdef",
    BANXICO_SIE_URL: unreachable,
    BANXICO_TOKEN: "token",
    FALLBACK_RATE_URL: unreachable,
    CEP_URL: unreachable,
    KYC_PROVIDER_URL: unreachable,
    KYC_PROVIDER_API_KEY: "production-kyc-key",
    KYC_PROVIDER_SECRET: "production-kyc-secret",
  });
}
