// The event consumer's read of its next batch (nextEventsQuery, src/sync/escrow-events.ts) against real
// PostgreSQL, in tables laid out as Ponder makes them: a session that first read the events while there were
// none keeps reading only the next ones once thousands are stored, on a database that is never analyzed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { migrate } from "../../src/db/migrate.ts";
import { nextEventsQuery } from "../../src/sync/escrow-events.ts";
import { createTestDatabase } from "../support/database.ts";
import { explainedRun, planNodes } from "../support/query-plans.ts";

const SCHEMA = "ponder_reads";
const STORED = 20_000;
const PER_BLOCK = 50;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let client: pg.Client;
before(async () => {
  database = await createTestDatabase();
  await migrate(database.url);
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
  // escrow_event and indexer_head with the columns and indexes of indexer/ponder.schema.ts.
  await client.query(`
    CREATE SCHEMA ${SCHEMA};
    CREATE TABLE ${SCHEMA}.escrow_event (
      id text PRIMARY KEY, chain_id integer NOT NULL, block_number bigint NOT NULL, block_hash text NOT NULL,
      block_timestamp bigint NOT NULL, transaction_hash text NOT NULL, transaction_index integer NOT NULL,
      log_index integer NOT NULL, address text NOT NULL, event_name text NOT NULL, order_id text, args jsonb NOT NULL);
    CREATE INDEX ON ${SCHEMA}.escrow_event (block_number, log_index);
    CREATE INDEX ON ${SCHEMA}.escrow_event (order_id);
    CREATE TABLE ${SCHEMA}.indexer_head (chain_id integer PRIMARY KEY, block_number bigint NOT NULL, block_hash text NOT NULL, block_timestamp bigint NOT NULL);`);
});
after(async () => {
  await client?.end();
  await database?.drop();
});

/** Blocks `from` to `to`, PER_BLOCK escrow events each, and the indexer's head at `to`; the consumer's cursor at its last event. */
async function indexed(from: number, to: number): Promise<void> {
  await client.query(
    `INSERT INTO ${SCHEMA}.escrow_event
       SELECT '31337-' || b || '-' || i, 31337, b, 'hash-' || b, 1700000000 + b, 'tx-' || b || '-' || i, i, i, '0xescrow', 'Deposited',
              '0x' || lpad(to_hex(b * 1000 + i), 64, '0'), '{}'::jsonb
         FROM generate_series($1::int, $2::int) b, generate_series(0, $3::int - 1) i`,
    [from, to, PER_BLOCK],
  );
  await client.query(
    `INSERT INTO ${SCHEMA}.indexer_head VALUES (31337, $1::bigint, 'hash-' || $1::text, 0)
     ON CONFLICT (chain_id) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash`,
    [to],
  );
  await client.query(
    `INSERT INTO chain_cursor (name, block_number, log_index, block_hash) VALUES ($1, $2::bigint, $3, 'hash-' || $2::text)
     ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number, log_index = EXCLUDED.log_index, block_hash = EXCLUDED.block_hash`,
    [SCHEMA, to, PER_BLOCK - 1],
  );
}

test(`the consumer's read of its next events reads those, not every event stored, in a session that first read none`, async () => {
  const query = nextEventsQuery(SCHEMA, 0, 200);
  // The consumer's session reads while nothing is indexed yet (a new deployment, vacuumed empty), more than
  // the five times after which PostgreSQL may keep a prepared statement's generic plan.
  await client.query(`VACUUM ${SCHEMA}.escrow_event, ${SCHEMA}.indexer_head, chain_cursor`);
  for (let i = 0; i < 8; i += 1) await client.query(query);

  const last = STORED / PER_BLOCK;
  await indexed(1, last);
  await client.query(`UPDATE chain_cursor SET block_number = $2, log_index = 9 WHERE name = $1`, [SCHEMA, last]);
  // Read again as the consumer sends it: by name if it is prepared, else its text.
  const name = (query as { name?: string }).name;
  const values = query.values.map((value) => client.escapeLiteral(String(value))).join(", ");
  const { plan, buffers } = name ? await explainedRun(client, `EXECUTE ${name}(${values})`) : await explainedRun(client, query.text, query.values);
  assert.equal(plan["Actual Rows"], PER_BLOCK - 10, "the events after the cursor");
  const scans = planNodes(plan).filter((node) => node["Relation Name"] === "escrow_event").map((node) => node["Node Type"]);
  assert.ok(!scans.includes("Seq Scan"), `escrow_event read by ${scans.join(", ")}`);
  const { rows: size } = await client.query<{ pages: number }>(`SELECT (pg_relation_size('${SCHEMA}.escrow_event') / 8192)::int AS pages`);
  // Each event also looks its order up (none here: 2 buffers each).
  assert.ok(buffers < size[0]!.pages, `read ${buffers} buffers; escrow_event has ${size[0]!.pages} pages`);
});
