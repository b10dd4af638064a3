// What partners install is the SDK built to JavaScript (sdk/dist, by `npm run build -w @offramp/sdk`):
// it must build, and load and work with no TypeScript support in the runtime.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { test } from "node:test";

const run = promisify(execFile);
const sdk = fileURLToPath(new URL("../../sdk/", import.meta.url));
const tsc = fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url));

test("the SDK builds to dist and its package entry runs with type stripping off", async () => {
  await run(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: sdk });
  const manifest = JSON.parse(await readFile(new URL("package.json", `file://${sdk}`), "utf8")) as { exports: { ".": { default: string; types: string } } };
  await readFile(new URL(manifest.exports["."].types, `file://${sdk}`));
  // Imported by its package name (the workspace link), as a partner's code would import it.
  const script = `
    import { createOfframpClient, verifyWebhook, QuoteExpiredError, WebhookVerificationError } from "@offramp/sdk";
    import { createHmac } from "node:crypto";
    const body = '{"event":"order.created","timestamp":"t","data":{"orderId":"ord_1","status":"PENDING_DEPOSIT","partnerUserRef":"u","sequence":1}}';
    const t = String(Math.floor(Date.now() / 1000));
    const event = verifyWebhook(body, { "x-webhook-timestamp": t, "x-webhook-signature": createHmac("sha256", "whsec_x").update(t + "." + body).digest("hex") }, "whsec_x");
    const client = createOfframpClient({ baseUrl: "http://127.0.0.1:9", apiKey: "k", retry: false });
    console.log(JSON.stringify({ orderId: event.data.orderId, client: typeof client.createOrder, error: new QuoteExpiredError({ message: "m" }).status, verification: typeof WebhookVerificationError }));
  `;
  const { stdout } = await run(process.execPath, ["--no-experimental-strip-types", "--input-type=module", "-e", script], { cwd: sdk });
  assert.deepEqual(JSON.parse(stdout), { orderId: "ord_1", client: "function", error: 410, verification: "function" });
});
