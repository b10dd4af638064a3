import { loadConfig, type Config } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { startService, type RunningService, type ServiceOptions } from "../../src/main.ts";
import { createTestDatabase } from "./database.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

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
  const config = loadConfig({ SANDBOX: "true", PORT: "0", LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent", ...env });
  const service = await startService({
    config,
    databaseUrl: database.url,
    adminToken: ADMIN_TOKEN,
    logger: createLogger(config.logLevel),
    ...(options.chain ? { chain: options.chain } : {}),
    ...(options.indexerSchema ? { indexerSchema: options.indexerSchema } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const test: TestService = {
    ...service,
    config,
    databaseUrl: database.url,
    api(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key !== undefined) headers["X-API-Key"] = options.key;
      let body: string | undefined;
      if (options.rawBody !== undefined) body = options.rawBody;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === "content-type")) headers["Content-Type"] = "application/json";
      return call(`${service.baseUrl}/api/v1${path}`, method, headers, body);
    },
    admin(method, path, body) {
      const headers: Record<string, string> = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      return call(`${service.baseUrl}/admin/v1${path}`, method, headers, body === undefined ? undefined : JSON.stringify(body));
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
      await service.stop();
      await database.drop();
    },
  };
  return test;
}
