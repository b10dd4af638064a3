// Decisions section 15: PostgreSQL killed and restarted under a live stack. The service reaches its
// database through a TCP proxy the test controls: closing it cuts every session at once and refuses new
// ones, as a killed server does; opening it again on the same port is the restart. The service and its
// parts (pools, Idempotency-Key claims, pg-boss, the escrow event consumer, the partner change listener)
// must come back by themselves: /readyz not ready meanwhile, then the trade completes, each action once.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPool, type Pool } from "../../src/db/pool.ts";
import { assertStatus } from "../support/assertions.ts";
import { serverAddress } from "../support/database.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { placeOrder, startChainStack, waitFor, waitForSettled, type ChainStack } from "../support/trade-stack.ts";

/** A TCP proxy to `target` that can be cut (every connection dropped, new ones refused) and reopened on its port. */
function databaseProxy(target: net.NetConnectOpts) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  return {
    get port() {
      return port;
    },
    async open(): Promise<void> {
      const listening = net.createServer((client) => {
        const upstream = net.connect(target);
        track(client);
        track(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on("error", drop).on("close", drop);
        upstream.on("error", drop).on("close", drop);
        client.pipe(upstream).pipe(client);
      });
      await new Promise<void>((resolve, reject) => listening.once("error", reject).listen(port, "127.0.0.1", resolve));
      port = (listening.address() as net.AddressInfo).port;
      server = listening;
    },
    async cut(): Promise<void> {
      const closed = new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

let chain: ChainStack;
let service: TestService;
let partner: { id: string; apiKey: string; webhookSecret: string };
let direct: Pool;
let database: ReturnType<typeof databaseProxy>;

before(async () => {
  chain = await startChainStack();
  direct = createPool(chain.databaseUrl);
  database = databaseProxy(serverAddress(chain.databaseUrl));
  await database.open();
  const proxied = new URL(chain.databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(database.port);
  service = await startTestService({}, { databaseUrl: proxied.toString(), chain: chain.chainSettings, indexerSchema: chain.indexerSchema });
  partner = await service.createPartner({ tier: "ENTERPRISE" });
});
after(async () => {
  await service?.close();
  await database?.cut();
  await direct?.end();
  await chain?.close();
});

async function ready(): Promise<number> {
  const response = await fetch(`${service.baseUrl}/readyz`).catch(() => undefined);
  return response?.status ?? 0;
}

async function status(orderId: string): Promise<string> {
  const { rows } = await direct.query<{ status: string }>("SELECT status FROM orders WHERE id = $1", [orderId]);
  return rows[0]!.status;
}

test("the service rides out its database killed and restarted: not ready meanwhile, then the trade completes, each action once", async () => {
  const order = await placeOrder({ service, partner }, { amountUsdc: 5 });
  assertStatus(await service.api("POST", `/sandbox/orders/${order.id}/deposit`, { key: partner.apiKey }), 200);

  await database.cut();
  await waitFor("/readyz not ready", async () => ((await ready()) === 503 ? true : undefined), 20_000);
  await sleep(2_000); // the workers, the consumer and the listener find their sessions gone meanwhile
  await database.open();
  await waitFor("/readyz ready again", async () => ((await ready()) === 200 ? true : undefined), 30_000);

  // The escrow event consumer holds its lock again, on a new session (one consumer per database).
  await waitFor("the consumer's lock taken again", async () => {
    const { rows } = await direct.query(
      `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.application_name = 'offramp'
          AND l.objid::bigint = (hashtext('escrow-event-consumer')::bigint & 4294967295)`,
    );
    return rows.length ? true : undefined;
  }, 30_000);
  await waitFor("the deposit applied (ACTIVE)", async () => ((await status(order.id)) === "ACTIVE" ? true : undefined), 60_000);
  const cancel = await service.api("POST", `/orders/${order.id}/cancel`, { key: partner.apiKey, headers: { "Idempotency-Key": `cancel-${order.id}` } });
  assertStatus(cancel, 200);
  await waitFor("the refund applied (REFUNDED)", async () => ((await status(order.id)) === "REFUNDED" ? true : undefined), 60_000);

  const { rows: events } = await direct.query<{ event_name: string; n: number }>(
    `SELECT event_name, count(*)::int AS n FROM "${chain.indexerSchema}".escrow_event WHERE order_id = $1 GROUP BY event_name ORDER BY event_name`,
    [order.escrowOrderId],
  );
  assert.deepEqual(events, [{ event_name: "Deposited", n: 1 }, { event_name: "Refunded", n: 1 }]);
  const sent = await waitForSettled("the cancel", async () => (await direct.query<{ action: string; status: string }>("SELECT action, status FROM chain_transactions WHERE order_id = $1", [order.id])).rows);
  assert.deepEqual(sent, [{ action: "cancel", status: "MINED" }]);
  const { rows: webhooks } = await direct.query<{ event_type: string; sequence: number }>("SELECT event_type, sequence FROM webhook_events WHERE order_id = $1 ORDER BY sequence", [order.id]);
  assert.deepEqual(webhooks.map((row) => row.sequence), webhooks.map((_, index) => index + 1), "every event once, in sequence");
  assert.equal(new Set(webhooks.map((row) => row.event_type)).size, webhooks.length, "no event twice");
});
