// Decisions 19 in the sandbox: exactly one sandbox wallet is on the sandbox sanctions list, so that
// sanctioned buyers can be tried; an order it locks is held and never released. Load generators and
// tests whose trades must complete take their buyers from unsanctionedSandboxAccounts (a bench that
// used every sandbox wallet as a buyer saw those orders stay LOCKED after a successful pay).
import assert from "node:assert/strict";
import { test } from "node:test";
import { SANCTIONED_SANDBOX_WALLET, sandboxAccounts, unsanctionedSandboxAccounts } from "../../src/stack/local-node.ts";
import { loadConfig } from "../../src/config.ts";
import { loadSanctionsList } from "../../src/domain/sanctions.ts";

const sandboxList = () => loadSanctionsList(loadConfig({ SANDBOX: "true" }).sanctionsListFiles);

test("the sandbox sanctions list names the sandbox wallet SANCTIONED_SANDBOX_WALLET", async () => {
  const list = await sandboxList();
  assert.equal(list.entryFor(sandboxAccounts[SANCTIONED_SANDBOX_WALLET]!.address), "SANDBOX SANCTIONED WALLET");
});

test("every sandbox wallet offered for completing trades is off the sandbox sanctions list", async () => {
  const list = await sandboxList();
  assert.equal(unsanctionedSandboxAccounts.length, sandboxAccounts.length - 1);
  for (const account of unsanctionedSandboxAccounts) assert.equal(list.isSanctioned(account.address), false, `${account.address} is sanctioned`);
});
