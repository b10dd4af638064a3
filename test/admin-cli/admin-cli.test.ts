import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { ADMIN_TOKEN, startTestService, type TestService } from "../support/service.ts";
import { repoRoot as ROOT } from "../../src/paths.ts";

// `npm run admin -- ...` run as a child process against a running test service, as an operator would.
const CLI = path.join(ROOT, "src/cli/admin.ts");

let service: TestService;
let dataDir: string;

before(async () => {
  service = await startTestService();
  dataDir = await mkdtemp(path.join(tmpdir(), "offramp-cli-"));
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
  await service.close();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with only the given environment (no ADMIN_TOKEN leaks in from the test runner). */
function cli(args: string[], env: Record<string, string> = { OFFRAMP_URL: service.baseUrl, ADMIN_TOKEN }): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function json(run: Run): Record<string, unknown> {
  assert.equal(run.code, 0, `exit ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

async function created(name = "CLI Partner", extra: string[] = []): Promise<Record<string, unknown>> {
  return json(await cli(["partners", "create", "--name", name, "--tier", "GROWTH", "--kyc-model", "PARTNER_MANAGED", ...extra]));
}

test("partners create prints the partner with apiKey and webhookSecret, and the key works", async () => {
  const partner = await created("Printed");
  assert.match(String(partner.id), /^ptn_/);
  assert.match(String(partner.apiKey), /^ofrk_[0-9a-f]{64}$/);
  assert.match(String(partner.webhookSecret), /^whsec_[0-9a-f]{64}$/);
  assert.equal(partner.name, "Printed");
  const health = await service.api("GET", "/health", { key: String(partner.apiKey) });
  assertStatus(health, 200);
  assert.equal(health.body.partner, "Printed");
});

test("partners create sends the webhook URL, allow-list, fee wallet and limits", async () => {
  const wallet = `0x${"3".repeat(40)}`;
  const partner = await created("Detailed", [
    "--webhook-url",
    "https://hooks.example.com/cli",
    "--ip-allow-list",
    "203.0.113.0/24, 2001:db8::1",
    "--fee-wallet",
    wallet,
    "--tier",
    "ENTERPRISE",
    "--limits",
    '{"requestsPerMinute":1500}',
  ]);
  const stored = await service.admin("GET", `/partners/${String(partner.id)}`);
  assert.equal(stored.body.webhookUrl, "https://hooks.example.com/cli");
  assert.deepEqual(stored.body.ipAllowList, ["203.0.113.0/24", "2001:db8::1"]);
  assert.equal(stored.body.feeWallet, wallet);
  assert.equal(stored.body.tier, "ENTERPRISE");
  assert.deepEqual(stored.body.limits, { requestsPerMinute: 1500 });
});

test("partners create without --name exits 2 and creates nothing", async () => {
  const before = (await service.admin<{ total: number }>("GET", "/partners")).body.total;
  const run = await cli(["partners", "create", "--tier", "FREE", "--kyc-model", "PARTNER_MANAGED"]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--name/);
  assert.equal((await service.admin<{ total: number }>("GET", "/partners")).body.total, before);
});

test("partners create with an unknown tier exits 1 with the service's VALIDATION_ERROR body on stderr", async () => {
  const run = await cli(["partners", "create", "--name", "X", "--tier", "GOLD", "--kyc-model", "PARTNER_MANAGED"]);
  assert.equal(run.code, 1);
  assert.equal(run.stdout, "");
  const body = JSON.parse(run.stderr) as { error: string; message: string };
  assert.equal(body.error, "VALIDATION_ERROR");
});

test("partners list prints the partners, never a key or secret", async () => {
  const partner = await created("Listed");
  const list = json(await cli(["partners", "list"])) as { partners: { id: string }[]; total: number };
  assert.ok(list.partners.some((entry) => entry.id === partner.id));
  const text = JSON.stringify(list);
  assert.ok(!text.includes(String(partner.apiKey).slice(13)));
  assert.ok(!text.includes(String(partner.webhookSecret).slice(6)));
});

test("partners list --limit and --offset page the list", async () => {
  await created("Page A");
  await created("Page B");
  const page = json(await cli(["partners", "list", "--limit", "1", "--offset", "1"])) as { partners: unknown[]; limit: number; offset: number; hasMore: boolean };
  assert.equal(page.partners.length, 1);
  assert.equal(page.limit, 1);
  assert.equal(page.offset, 1);
  assert.equal(page.hasMore, true);
});

test("partners get prints one partner", async () => {
  const partner = await created("Fetched");
  const shown = json(await cli(["partners", "get", String(partner.id)]));
  assert.equal(shown.id, partner.id);
  assert.equal(shown.name, "Fetched");
  assert.equal(shown.apiKey, undefined);
});

test("partners get of an unknown id exits 1 with NOT_FOUND on stderr", async () => {
  const run = await cli(["partners", "get", "ptn_000000000000000000000000"]);
  assert.equal(run.code, 1);
  assert.equal((JSON.parse(run.stderr) as { error: string }).error, "NOT_FOUND");
});

test("partners update --status INACTIVE deactivates the partner", async () => {
  const partner = await created("Deactivated");
  const updated = json(await cli(["partners", "update", String(partner.id), "--status", "INACTIVE"]));
  assert.equal(updated.status, "INACTIVE");
  assertError(await service.api("GET", "/health", { key: String(partner.apiKey) }), 403, "PARTNER_INACTIVE");
});

test("partners update sets KYB status, tier, name, webhook URL, allow-list, fee wallet and limits", async () => {
  const partner = await created("Before");
  const wallet = `0x${"4".repeat(40)}`;
  const updated = json(
    await cli([
      "partners",
      "update",
      String(partner.id),
      "--kyb-status",
      "SUSPENDED",
      "--tier",
      "ENTERPRISE",
      "--name",
      "After",
      "--webhook-url",
      "https://hooks.example.com/new",
      "--ip-allow-list",
      "198.51.100.7",
      "--fee-wallet",
      wallet,
      "--limits",
      '{"maxUsers":42}',
    ]),
  );
  assert.deepEqual(
    [updated.kybStatus, updated.tier, updated.name, updated.webhookUrl, updated.ipAllowList, updated.feeWallet, updated.limits],
    ["SUSPENDED", "ENTERPRISE", "After", "https://hooks.example.com/new", ["198.51.100.7"], wallet, { maxUsers: 42 }],
  );
});

test("partners update with empty values clears the webhook URL and fee wallet and empties the allow-list", async () => {
  const partner = await created("Cleared", ["--webhook-url", "https://hooks.example.com/x", "--fee-wallet", `0x${"5".repeat(40)}`, "--ip-allow-list", "203.0.113.1"]);
  const updated = json(await cli(["partners", "update", String(partner.id), "--webhook-url", "", "--fee-wallet", "none", "--ip-allow-list", ""]));
  assert.equal(updated.webhookUrl, null);
  assert.equal(updated.feeWallet, null);
  assert.deepEqual(updated.ipAllowList, []);
});

test("partners update without any change exits 2", async () => {
  const partner = await created("Unchanged");
  const run = await cli(["partners", "update", String(partner.id)]);
  assert.equal(run.code, 2);
});

test("partners rotate-key prints a new key and the old key stops working", async () => {
  const partner = await created("Rotated");
  const rotated = json(await cli(["partners", "rotate-key", String(partner.id)]));
  assert.match(String(rotated.apiKey), /^ofrk_[0-9a-f]{64}$/);
  assertError(await service.api("GET", "/health", { key: String(partner.apiKey) }), 401, "INVALID_API_KEY");
  assertStatus(await service.api("GET", "/health", { key: String(rotated.apiKey) }), 200);
});

test("partners webhook-secret prints a new secret", async () => {
  const partner = await created("Resecreted");
  const renewed = json(await cli(["partners", "webhook-secret", String(partner.id)]));
  assert.match(String(renewed.webhookSecret), /^whsec_[0-9a-f]{64}$/);
  assert.notEqual(renewed.webhookSecret, partner.webhookSecret);
});

test("a wrong token exits 1 with UNAUTHORIZED on stderr", async () => {
  const run = await cli(["partners", "list"], { OFFRAMP_URL: service.baseUrl, ADMIN_TOKEN: "wrong-token-0123456789" });
  assert.equal(run.code, 1);
  assert.equal((JSON.parse(run.stderr) as { error: string }).error, "UNAUTHORIZED");
});

test("--token takes precedence over ADMIN_TOKEN", async () => {
  const run = await cli(["partners", "list", "--token", ADMIN_TOKEN], { OFFRAMP_URL: service.baseUrl, ADMIN_TOKEN: "wrong-token-0123456789" });
  assert.equal(run.code, 0, run.stderr);
});

test("without --token or ADMIN_TOKEN the token is read from $DATA_DIR/sandbox.json", async () => {
  await writeFile(path.join(dataDir, "sandbox.json"), JSON.stringify({ adminToken: ADMIN_TOKEN, apiKey: "ofrk_demo" }));
  try {
    const run = await cli(["partners", "list"], { OFFRAMP_URL: service.baseUrl });
    assert.equal(run.code, 0, run.stderr);
  } finally {
    await rm(path.join(dataDir, "sandbox.json"));
  }
});

test("without any token it exits 2 and says where a token comes from", async () => {
  const run = await cli(["partners", "list"], { OFFRAMP_URL: service.baseUrl });
  assert.equal(run.code, 2);
  assert.match(run.stderr, /ADMIN_TOKEN/);
});

test("--url takes precedence over OFFRAMP_URL, before or after the command", async () => {
  const env = { OFFRAMP_URL: "http://127.0.0.1:9", ADMIN_TOKEN };
  assert.equal((await cli(["partners", "list", "--url", service.baseUrl], env)).code, 0);
  assert.equal((await cli(["--url", service.baseUrl, "partners", "list"], env)).code, 0);
});

test("an unreachable service exits 1 with a message naming its URL", async () => {
  const run = await cli(["partners", "list"], { OFFRAMP_URL: "http://127.0.0.1:9", ADMIN_TOKEN });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /http:\/\/127\.0\.0\.1:9/);
});

test("an unknown command or option exits 2", async () => {
  assert.equal((await cli(["partners", "delete", "ptn_x"])).code, 2);
  assert.equal((await cli(["tenants", "list"])).code, 2);
  assert.equal((await cli(["partners", "list", "--colour"])).code, 2);
});

test("--help prints the commands and exits 0", async () => {
  const run = await cli(["--help"]);
  assert.equal(run.code, 0);
  for (const command of ["create", "list", "get", "update", "rotate-key", "webhook-secret"]) assert.match(run.stdout, new RegExp(`partners ${command}`));
});
