// `npm run sdk:types`: starts the service in this process (sandbox, with chain settings so every route,
// orders and sandbox helpers included, is mounted; no node is needed to serve the document), reads
// /api/v1/openapi.json as a partner would, and writes the SDK's generated modules from it. Needs the
// test PostgreSQL (TEST_DATABASE_URL, default 127.0.0.1:5432), as the tests do.
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { startOfflineOrderService } from "../../test/support/trade-stack.ts";
import { generatedModules } from "./partner-types.ts";

const service = await startOfflineOrderService();
try {
  const response = await fetch(`${service.baseUrl}/api/v1/openapi.json`);
  if (!response.ok) throw new Error(`GET /api/v1/openapi.json answered ${response.status}`);
  for (const { file, text } of await generatedModules(await response.json())) {
    await writeFile(file, text);
    console.log(`wrote ${fileURLToPath(file)}`);
  }
} finally {
  await service.close();
}
