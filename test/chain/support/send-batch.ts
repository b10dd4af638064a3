// A sender in its own process, so a test can SIGKILL it in the middle of a batch and run another.
// Reads OFFRAMP_SEND_BATCH (JSON: databaseUrl, chain, transactionIds), moves every request on
// concurrently until its receipt settles it, prints "SETTLED" and exits.
import { setTimeout as sleep } from "node:timers/promises";
import { createEscrowGateway, type ChainSettings } from "../../../src/chain/escrow-gateway.ts";
import { createTransactionSender } from "../../../src/chain/transaction-sender.ts";
import { createPool } from "../../../src/db/pool.ts";
import { createLogger } from "../../../src/logger.ts";

const spec = JSON.parse(process.env.OFFRAMP_SEND_BATCH ?? "{}") as { databaseUrl: string; chain: ChainSettings; transactionIds: string[] };
const pool = createPool(spec.databaseUrl);
const sender = createTransactionSender({ pool, gateway: createEscrowGateway(spec.chain), logger: createLogger("silent") });
await Promise.all(
  spec.transactionIds.map(async (id) => {
    while ((await sender.process(id)) === "SENT") await sleep(100);
  }),
);
process.stdout.write("SETTLED\n");
await pool.end();
