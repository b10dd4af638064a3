// The escrow's treasury as order creation takes it (src/chain/treasury.ts): read from the chain at start and
// every interval, kept in memory, so no order's transaction waits on the chain.
import assert from "node:assert/strict";
import { test } from "node:test";
import { until } from "../support/until.ts";
import type { Address } from "viem";
import { watchTreasury } from "../../src/chain/treasury.ts";
import { createLogger } from "../../src/logger.ts";

const FIRST = "0x1111111111111111111111111111111111111111" as Address;
const SECOND = "0x2222222222222222222222222222222222222222" as Address;

test("the treasury is read at start and then served from memory until the next interval", async () => {
  let reads = 0;
  const watch = watchTreasury({ read: async () => (reads++, FIRST), logger: createLogger("silent"), refreshMs: 60_000 });
  try {
    await until(() => watch.current() !== undefined);
    for (let i = 0; i < 100; i++) assert.equal(watch.current(), FIRST);
    assert.equal(reads, 1);
  } finally {
    watch.stop();
  }
});

test("a setTreasury on chain reaches the served address at the next read", async () => {
  let onChain = FIRST;
  const watch = watchTreasury({ read: async () => onChain, logger: createLogger("silent"), refreshMs: 30 });
  try {
    await until(() => watch.current() === FIRST);
    onChain = SECOND;
    await until(() => watch.current() === SECOND);
  } finally {
    watch.stop();
  }
});

test("while the chain cannot be reached the treasury is unknown, retried, and kept once read", async () => {
  let reachable = false;
  let reads = 0;
  const read = async () => {
    reads += 1;
    if (!reachable) throw new Error("ECONNREFUSED");
    return FIRST;
  };
  const watch = watchTreasury({ read, logger: createLogger("silent"), refreshMs: 30, retryMs: 10 });
  try {
    await until(() => reads >= 3);
    assert.equal(watch.current(), undefined);
    reachable = true;
    await until(() => watch.current() === FIRST);
    reachable = false;
    const readsBefore = reads;
    await until(() => reads >= readsBefore + 2);
    assert.equal(watch.current(), FIRST, "a failed refresh keeps the last address read");
  } finally {
    watch.stop();
  }
});
