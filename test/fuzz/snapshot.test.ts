import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createSnapshotter, type Snapshotter } from "../../src/cli/fuzz/snapshot.ts";
import { migrate } from "../../src/db/migrate.ts";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { foldOrderCounts } from "../../src/orders/order-counts.ts";
import { createPartner } from "../../src/partners/partners.ts";
import { createTestDatabase } from "../support/database.ts";

// The fuzz run's data check (src/cli/fuzz/snapshot.ts): a refused request must change no row, while the
// work the service does by itself between two snapshots (the counters' fold) is not a change.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
let snapshotter: Snapshotter;
let partnerId: string;

before(async () => {
  database = await createTestDatabase();
  await migrate(database.url);
  pool = createPool(database.url, 2);
  partnerId = (await createPartner(pool, { name: "Snapshot", tier: "GROWTH", kycModel: "PARTNER_MANAGED" })).partner.id;
  snapshotter = await createSnapshotter(database.url);
});
after(async () => {
  await snapshotter.close();
  await pool.end();
  await database.drop();
});

async function appendCount(status: string, count: number): Promise<void> {
  await pool.query("INSERT INTO order_counts (partner_id, status, count) VALUES ($1, $2, $3)", [partnerId, status, count]);
}

test("a fold of the order counters between two snapshots is no change", async () => {
  await appendCount("ACTIVE", 1);
  await appendCount("ACTIVE", 1);
  await appendCount("LOCKED", 1);
  await appendCount("LOCKED", -1);
  const before = await snapshotter.take();
  assert.ok((await foldOrderCounts(pool)) > 0, "the fold changed rows");
  const after = await snapshotter.take();
  assert.ok(snapshotter.equal(before, after));
  assert.deepEqual(await snapshotter.diff(before, after), []);
});

test("a changed order total is a change, shown as the total", async () => {
  const before = await snapshotter.take();
  await appendCount("ACTIVE", 1);
  const after = await snapshotter.take();
  assert.equal(snapshotter.equal(before, after), false);
  const changes = await snapshotter.diff(before, after);
  assert.deepEqual(changes.map((c) => [c.table, c.added, c.removed]), [["order_counts", 1, 1]]);
  assert.deepEqual(changes[0]!.examples, [`(${partnerId},ACTIVE,3)`]);
});

test("a changed row of any other table is a change", async () => {
  const before = await snapshotter.take();
  await pool.query("UPDATE partners SET name = 'Renamed' WHERE id = $1", [partnerId]);
  const changes = await snapshotter.diff(before, await snapshotter.take());
  assert.deepEqual(changes.map((c) => [c.table, c.added, c.removed]), [["partners", 1, 1]]);
});
