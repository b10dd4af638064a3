import { orderMachine, ORDER_STATUSES, type OrderStatus } from "../orders/machine.ts";

// `GET /admin/v1/machine`: the order machine's own definition, read from the XState machine object (never
// a hand-kept copy), for drawing. `definition` is XState's serialisable definition as it stands;
// `states` and `transitions` are the same facts flattened for a renderer: one entry per state, one per
// edge that changes the state, and per state the events it handles without leaving it.

export interface MachineTransition {
  from: OrderStatus;
  to: OrderStatus;
  /** The machine event that takes this edge, e.g. DISPUTE_OPENED. */
  event: string;
  /** The named guard that must hold, when there is one (e.g. retryOutcome). */
  guard: string | null;
}

export interface MachineState {
  name: OrderStatus;
  final: boolean;
  initial: boolean;
  /** Events handled in this state that do not change it (they record, request a transaction, wait). */
  internalEvents: { event: string; guard: string | null }[];
}

export interface MachineDescription {
  id: string;
  initial: OrderStatus;
  states: MachineState[];
  finalStates: OrderStatus[];
  transitions: MachineTransition[];
  definition: unknown;
}

const guardName = (guard: unknown): string | null => {
  if (typeof guard === "string") return guard;
  if (guard && typeof guard === "object" && typeof (guard as { type?: unknown }).type === "string") return (guard as { type: string }).type;
  return null;
};

function describe(): MachineDescription {
  const root = orderMachine.root;
  const initial = root.initial.target[0]?.key as OrderStatus;
  const states: MachineState[] = [];
  const transitions: MachineTransition[] = [];
  for (const [name, node] of Object.entries(root.states)) {
    const from = name as OrderStatus;
    const internalEvents: MachineState["internalEvents"] = [];
    for (const [event, candidates] of node.transitions) {
      for (const candidate of candidates) {
        const guard = guardName(candidate.guard);
        const target = candidate.target?.[0]?.key as OrderStatus | undefined;
        if (target === undefined) internalEvents.push({ event, guard });
        else transitions.push({ from, to: target, event, guard });
      }
    }
    states.push({ name: from, final: node.type === "final", initial: from === initial, internalEvents });
  }
  // The machine and the spec's status list must agree; a drift is a programming error, caught at start.
  const names = states.map((state) => state.name).sort();
  if (names.join() !== [...ORDER_STATUSES].sort().join()) throw new Error(`order machine states ${names.join()} differ from ORDER_STATUSES`);
  return {
    id: orderMachine.id,
    initial,
    states,
    finalStates: states.filter((state) => state.final).map((state) => state.name),
    transitions,
    definition: JSON.parse(JSON.stringify(orderMachine.definition)) as unknown,
  };
}

let cached: MachineDescription | undefined;

/** The order machine described for drawing (computed once: the machine does not change at run time). */
export function machineDescription(): MachineDescription {
  cached ??= describe();
  return cached;
}
