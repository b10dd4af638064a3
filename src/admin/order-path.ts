import type { OrderStatus } from "../orders/machine.ts";
import type { TimelineEntry } from "../orders/queries.ts";

// One order's path through the state chart, read from its timeline: the machine writes a timeline entry
// on every state change (CREATED on entry, then one per transition), so the entries that mark a change
// give the states in the order they were entered, with the machine event that took each edge.

export interface PathStep {
  state: OrderStatus;
  /** The machine event of the edge into this state (null for the initial state). */
  event: string | null;
  /** The timeline entry that shows the step. */
  timelineId: string;
  at: string;
}

/** The state a timeline entry enters and the event that took it there, or undefined when it stays put. */
function stepOf(entry: TimelineEntry): { state: OrderStatus; event: string | null } | undefined {
  switch (entry.event) {
    case "CREATED":
      return { state: "PENDING_DEPOSIT", event: null };
    case "DEPOSIT_CONFIRMED":
      return { state: "ACTIVE", event: "DEPOSIT_CONFIRMED" };
    case "LOCKED":
      return { state: "LOCKED", event: "LOCKED" };
    case "PAYMENT_VERIFIED":
      return { state: "PENDING_RELEASE", event: "PAYMENT_VERIFIED" };
    case "DISPUTED":
      return { state: "DISPUTED", event: "DISPUTE_OPENED" };
    case "DISPUTE_RESOLVED":
      // Release and refund outcomes stay DISPUTED until the same transaction's Released/Refunded.
      return entry.data.outcome === "NO_FAULT_RETRY" ? { state: "LOCKED", event: "DISPUTE_RESOLVED" } : undefined;
    case "COMPLETED":
      return { state: "COMPLETED", event: "RELEASED" };
    case "REFUNDED":
      return { state: "REFUNDED", event: "REFUNDED" };
    case "EXPIRED": {
      const reason = entry.data.reason;
      const event = reason === "DEPOSIT_TIMEOUT" ? "TIMER_FIRED" : reason === "CANCELLED" ? "CANCEL" : "REFUNDED";
      return { state: "EXPIRED", event };
    }
    default:
      return undefined;
  }
}

export function orderPath(timeline: TimelineEntry[]): PathStep[] {
  const path: PathStep[] = [];
  for (const entry of timeline) {
    const step = stepOf(entry);
    if (step) path.push({ ...step, timelineId: entry.id, at: entry.timestamp });
  }
  return path;
}
