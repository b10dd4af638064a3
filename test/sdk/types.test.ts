// The SDK is typed from the partner document exactly as served: its generated modules are what
// `npm run sdk:types` makes of GET /api/v1/openapi.json, and it has an error class for every code.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { generatedModules } from "../../sdk/scripts/partner-types.ts";
import { ERROR_CLASSES } from "../../sdk/src/index.ts";
import { STATUS_BY_CODE } from "../../src/domain/errors.ts";
import type { TestService } from "../support/service.ts";
import { startOfflineOrderService } from "../support/trade-stack.ts";

let service: TestService;
let document: { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { properties?: { error?: { enum?: string[] } } } }> }> }>> };
before(async () => {
  // With chain settings (no node needed to serve the document) so every partner route is mounted.
  service = await startOfflineOrderService();
  document = (await (await fetch(`${service.baseUrl}/api/v1/openapi.json`)).json()) as typeof document;
});
after(() => service?.close());

test("the SDK's generated modules are those of the served partner document (else run npm run sdk:types)", async () => {
  for (const { file, text } of await generatedModules(document)) {
    assert.equal(await readFile(file, "utf8"), text, `${file.pathname} differs from the served document: run \`npm run sdk:types\``);
  }
});

test("every error code the partner document lists has its SDK class, with the documented status", () => {
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const code of response.content?.["application/json"]?.schema.properties?.error?.enum ?? []) {
          assert.equal(ERROR_CLASSES[code]?.status, Number(status), `${method.toUpperCase()} ${path} ${status} ${code}`);
        }
      }
    }
  }
});

test("the SDK has one error class per code of the service, with its status", () => {
  // STATUS_BY_CODE is complete here: the service started above loaded every module that adds codes.
  assert.deepEqual(
    Object.fromEntries(Object.entries(ERROR_CLASSES).map(([code, errorClass]) => [code, errorClass.status])),
    STATUS_BY_CODE,
  );
});
