// `npm run demo` (issue 4): run as a child process against a running service, it drives one trade to
// COMPLETED through the public APIs and prints each step and each webhook with its signature checked.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { ADMIN_TOKEN } from "../support/service.ts";
import { startTradeStack, type TradeStack } from "../support/trade-stack.ts";
import { settledChainTransactions } from "./support/payments.ts";

const demoScript = fileURLToPath(new URL("../../src/cli/demo.ts", import.meta.url));

let stack: TradeStack;
before(async () => {
  stack = await startTradeStack();
});
after(() => stack?.close());

async function runDemo(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [demoScript, ...args], { env: { ...process.env, ADMIN_TOKEN: "", OFFRAMP_URL: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  const [code] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

test("the demo drives a trade to COMPLETED, printing each step with its elapsed time and every signed webhook", async () => {
  const { code, stdout, stderr } = await runDemo(["--url", stack.service.baseUrl, "--admin-token", ADMIN_TOKEN]);
  assert.equal(code, 0, `exit ${code}\n${stdout}\n${stderr}`);
  const lines = stdout.trim().split("\n");
  const steps = lines.filter((line) => /^\[\s*\d+\.\d{2}s\] /.test(line));
  const elapsed = steps.map((line) => Number(/^\[\s*(\d+\.\d{2})s\]/.exec(line)![1]));
  assert.deepEqual([...elapsed].sort((a, b) => a - b), elapsed, "elapsed times only grow");
  for (const text of ["partner ptn_", "user demo-user-", "quote qt_", "PENDING_DEPOSIT", "deposited", "order ACTIVE", "signed in to the market", "KYC approved", "market's order book", "lock permit", "locked the order with the permit", "order LOCKED", "with concept OFR", "paid", "reported the payment through the market", "PENDING_RELEASE", "order COMPLETED"]) {
    assert.ok(steps.some((line) => line.includes(text)), `a step mentions "${text}"\n${stdout}`);
  }
  const webhookLines = steps.filter((line) => line.includes("webhook #"));
  for (const [sequence, event] of ["order.created", "order.deposit_confirmed", "order.locked", "order.payment_verified", "order.completed"].entries()) {
    assert.ok(
      webhookLines.some((line) => line.includes(`webhook #${sequence + 1} ${event} `) && line.endsWith(")") && line.includes("signature ok")),
      `webhook #${sequence + 1} ${event} with a valid signature\n${stdout}`,
    );
  }
  assert.match(lines.at(-1)!, /^Trade completed in \d+\.\d s; 5 webhooks received, all correctly signed\.$/);
  const seconds = (text: string) => Number(/^\[\s*(\d+\.\d{2})s\]/.exec(steps.find((line) => line.includes(text))!)![1]);
  console.log(`# demo, market path from the order book to COMPLETED: ${(seconds("order COMPLETED") - seconds("market's order book")).toFixed(2)} s`);

  const orderId = /order (ord_\w+) PENDING_DEPOSIT/.exec(stdout)![1]!;
  const { rows } = await stack.service.pool.query<{ status: string }>("SELECT status FROM orders WHERE id = $1", [orderId]);
  assert.equal(rows[0]!.status, "COMPLETED");
  assert.deepEqual((await settledChainTransactions(stack.service.pool, orderId)).map((tx) => [tx.action, tx.status]), [["confirmPayment", "MINED"]]);
});

test("without an admin token the demo says where to find one and exits 1", async () => {
  const { code, stderr } = await runDemo(["--url", stack.service.baseUrl], { DATA_DIR: "/nonexistent-offramp-data" });
  assert.equal(code, 1);
  assert.match(stderr, /no admin token: pass --admin-token, set ADMIN_TOKEN, or run `npm start`/);
});

test("a wrong admin token stops the demo at the first step with the API's error", async () => {
  const { code, stderr } = await runDemo(["--url", stack.service.baseUrl, "--admin-token", "wrong-token-0123456789"]);
  assert.equal(code, 1);
  assert.match(stderr, /POST \/admin\/v1\/partners answered 401 UNAUTHORIZED/);
});
