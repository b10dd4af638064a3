import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, assertStatus } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";

// GET /admin/v1/machine serves the order machine's own definition (decisions section 12), which the
// console draws; it must say what the spec's "States and transitions" says.

interface Machine {
  id: string;
  initial: string;
  states: { name: string; final: boolean; initial: boolean; internalEvents: { event: string; guard: string | null }[] }[];
  finalStates: string[];
  transitions: { from: string; to: string; event: string; guard: string | null }[];
  definition: { id: string; states: Record<string, { type: string; on: Record<string, unknown> }> };
}

let service: TestService;
let machine: Machine;

before(async () => {
  service = await startTestService();
  const response = await service.admin<Machine>("GET", "/machine");
  assertStatus(response, 200);
  machine = response.body;
});
after(() => service?.close());

const SPEC_STATUSES = ["PENDING_DEPOSIT", "ACTIVE", "LOCKED", "PENDING_RELEASE", "COMPLETED", "EXPIRED", "REFUNDED", "DISPUTED"];

test("the machine has the spec's eight states", () => {
  assert.deepEqual(machine.states.map((state) => state.name).sort(), [...SPEC_STATUSES].sort());
});

test("COMPLETED, EXPIRED and REFUNDED are the final states", () => {
  assert.deepEqual([...machine.finalStates].sort(), ["COMPLETED", "EXPIRED", "REFUNDED"]);
  for (const state of machine.states) assert.equal(state.final, machine.finalStates.includes(state.name), state.name);
});

test("an order starts in PENDING_DEPOSIT", () => {
  assert.equal(machine.initial, "PENDING_DEPOSIT");
  assert.deepEqual(machine.states.filter((state) => state.initial).map((state) => state.name), ["PENDING_DEPOSIT"]);
});

test("every move of the spec's transition table, and refund by cancellation, is an edge", () => {
  const edges = new Set(machine.transitions.map((edge) => `${edge.from}>${edge.to}`));
  const spec = [
    "PENDING_DEPOSIT>ACTIVE",
    "PENDING_DEPOSIT>EXPIRED",
    "ACTIVE>LOCKED",
    "ACTIVE>EXPIRED",
    "ACTIVE>REFUNDED",
    "LOCKED>PENDING_RELEASE",
    "LOCKED>REFUNDED",
    "LOCKED>DISPUTED",
    "PENDING_RELEASE>COMPLETED",
    "DISPUTED>COMPLETED",
    "DISPUTED>REFUNDED",
    "DISPUTED>LOCKED",
  ];
  for (const move of spec) assert.ok(edges.has(move), `missing ${move}`);
});

test("no edge leaves a final state", () => {
  const leaving = machine.transitions.filter((edge) => machine.finalStates.includes(edge.from));
  assert.deepEqual(leaving, []);
});

test("the dispute edges name their events and guards: opening, retry, and release or refund by outcome", () => {
  const find = (from: string, to: string) => machine.transitions.filter((edge) => edge.from === from && edge.to === to);
  assert.deepEqual(find("LOCKED", "DISPUTED").map((edge) => edge.event), ["DISPUTE_OPENED"]);
  assert.deepEqual(find("DISPUTED", "LOCKED"), [{ from: "DISPUTED", to: "LOCKED", event: "DISPUTE_RESOLVED", guard: "retryOutcome" }]);
  assert.deepEqual(find("DISPUTED", "COMPLETED"), [{ from: "DISPUTED", to: "COMPLETED", event: "RELEASED", guard: "releasingOutcome" }]);
  assert.deepEqual(find("DISPUTED", "REFUNDED"), [{ from: "DISPUTED", to: "REFUNDED", event: "REFUNDED", guard: "refundingOutcome" }]);
});

test("an operator's resolution request is handled in DISPUTED without leaving it", () => {
  const disputed = machine.states.find((state) => state.name === "DISPUTED");
  assert.deepEqual(disputed?.internalEvents.find((event) => event.event === "RESOLUTION_REQUESTED"), { event: "RESOLUTION_REQUESTED", guard: "resolutionAllowed" });
});

test("the XState definition itself is served beside the flattened form", () => {
  assert.equal(machine.definition.id, "order");
  assert.deepEqual(Object.keys(machine.definition.states).sort(), [...SPEC_STATUSES].sort());
  for (const name of machine.finalStates) assert.equal(machine.definition.states[name]!.type, "final");
});

test("the machine needs the admin token", async () => {
  const response = await fetch(`${service.baseUrl}/admin/v1/machine`);
  assertError({ status: response.status, headers: response.headers, body: await response.json() }, 401, "UNAUTHORIZED");
});

test("stats count every state, zero included, on a service without orders", async () => {
  const response = await service.admin<{ orders: { byStatus: Record<string, number>; total: number }; deliveries: { byStatus: Record<string, number>; total: number } }>("GET", "/stats");
  assertStatus(response, 200);
  assert.deepEqual(Object.keys(response.body.orders.byStatus).sort(), [...SPEC_STATUSES].sort());
  assert.ok(Object.values(response.body.orders.byStatus).every((count) => count === 0));
  assert.equal(response.body.orders.total, 0);
  assert.deepEqual(response.body.deliveries.byStatus, { PENDING: 0, DELIVERED: 0, FAILED: 0 });
});
