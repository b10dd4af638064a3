// `npm run gas`: measures the gas of every OfframpEscrow function from transaction receipts on an
// in-process Hardhat network and writes docs/gas.md. Scenarios reuse the test fixture
// (test/escrow/fixtures.ts), so they match what the tests exercise.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { keccak256, toHex, zeroAddress } from "viem";
import type { TransactionReceipt } from "viem";
import { ARBITER_ROLE, readArtifact } from "../src/chain/deploy.ts";
import { disputeOutcome, escrowAbi, testUsdcAbi } from "../src/chain/escrow-abi.ts";
import { deployFixture } from "../test/escrow/fixtures.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const output = path.join(root, "docs/gas.md");

interface Row {
  fn: string;
  scenario: string;
  gas: bigint;
}

const f = await deployFixture();
const rows: Row[] = [];
const record = (fn: string, scenario: string, receipt: TransactionReceipt) => rows.push({ fn, scenario, gas: receipt.gasUsed });
let cep = 0;
const nextCep = () => keccak256(toHex(`gas-cep-${++cep}`));

// Steady state: every payee already holds some USDC (a first credit to an empty balance costs more,
// measured separately below).
for (const account of [f.buyer.account.address, f.partner, f.treasury, f.seller.account.address, f.stranger.account.address]) {
  await f.fund(account, 1n);
}

// Deployment and admin.
{
  const usdc = await readArtifact("TestUSDC");
  record("TestUSDC deployment", "constructor", await f.mined(f.admin.deployContract({ abi: testUsdcAbi, bytecode: usdc.bytecode, args: [] })));
  const escrow = await readArtifact("OfframpEscrow");
  record(
    "OfframpEscrow deployment",
    "constructor(admin, treasury)",
    await f.mined(f.admin.deployContract({ abi: escrowAbi, bytecode: escrow.bytecode, args: [f.admin.account.address, f.treasury] })),
  );
  record("grantRole", "ARBITER_ROLE to a new account", await f.tx(f.admin, "grantRole", [ARBITER_ROLE, f.wallet(9).account.address]));
  const other = await f.deploy("TestUSDC", []);
  record("setTokenAllowed", "allow a new token", await f.tx(f.admin, "setTokenAllowed", [other, true]));
  record("setTreasury", "change the treasury", await f.tx(f.admin, "setTreasury", [f.wallet(8).account.address]));
  await f.tx(f.admin, "setTreasury", [f.treasury]);
  record("pause", "", await f.tx(f.admin, "pause", []));
  record("unpause", "", await f.tx(f.admin, "unpause", []));
  record("TestUSDC.mint", "to a holder", await f.mined(f.admin.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "mint", args: [f.seller.account.address, 10n ** 12n] })));
  record("TestUSDC.approve", "escrow allowance", await f.mined(f.seller.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "approve", args: [f.escrow, 10n ** 12n] })));
}

// Order flow.
{
  const partnerFee = await f.deposit({ feeBps: 100, treasuryShareBps: 3000 });
  record("deposit", "partner fee recipient", partnerFee.receipt);
  const userFee = await f.deposit({ feeBps: 100, treasuryShareBps: 3000, feeRecipient: zeroAddress });
  record("deposit", "fee to the seller (recipient zero)", userFee.receipt);
  record("lock", "", await f.tx(f.buyer, "lock", [partnerFee.terms.orderId]));
  record("confirmPayment", "partner fee + treasury share (3 transfers)", await f.tx(f.service, "confirmPayment", [partnerFee.terms.orderId, nextCep()]));
  await f.tx(f.buyer, "lock", [userFee.terms.orderId]);
  record("confirmPayment", "fee to the seller + treasury share (3 transfers)", await f.tx(f.service, "confirmPayment", [userFee.terms.orderId, nextCep()]));
  const noFee = await f.depositAndLock({ feeBps: 0 });
  record("confirmPayment", "no fee (1 transfer)", await f.tx(f.service, "confirmPayment", [noFee.orderId, nextCep()]));

  const cancelled = await f.deposit();
  record("cancel", "", await f.tx(f.service, "cancel", [cancelled.terms.orderId]));
  const listed = await f.deposit({ listingWindow: 100n });
  await f.travel(100n);
  record("expireListing", "", await f.tx(f.stranger, "expireListing", [listed.terms.orderId]));
  const expired = await f.depositAndLock({ lockWindow: 100n });
  await f.travel(100n);
  record("refundExpiredLock", "", await f.tx(f.stranger, "refundExpiredLock", [expired.orderId]));
}

// Disputes.
{
  const disputed = async () => {
    const terms = await f.depositAndLock({ feeBps: 100, treasuryShareBps: 3000 });
    return terms.orderId;
  };
  const first = await disputed();
  record("openDispute", "by the buyer", await f.tx(f.buyer, "openDispute", [first]));
  const names = ["BUYER (release, seller -50)", "SELLER (refund, buyer -50)", "NO_FAULT_RELEASE", "NO_FAULT_REFUND", "NO_FAULT_RETRY"];
  for (const outcome of Object.values(disputeOutcome)) {
    const id = outcome === 0 ? first : await disputed();
    if (outcome !== 0) await f.tx(f.seller, "openDispute", [id]);
    record("resolveDispute", names[outcome] ?? String(outcome), await f.tx(f.arbiter, "resolveDispute", [id, outcome]));
  }
}

// Cold payees: a release whose three recipients have never held USDC.
{
  const terms = await f.makeTerms({ feeBps: 100, treasuryShareBps: 3000, feeRecipient: f.wallet(11).account.address });
  await f.fund(f.seller.account.address, terms.amount);
  await f.mined(f.seller.writeContract({ address: f.usdc, abi: testUsdcAbi, functionName: "approve", args: [f.escrow, terms.amount] }));
  await f.tx(f.seller, "deposit", [terms, await f.sign(terms)]);
  await f.tx(f.wallet(10), "lock", [terms.orderId]);
  await f.tx(f.admin, "setTreasury", [f.wallet(12).account.address]);
  record("confirmPayment", "3 transfers to payees with empty balances", await f.tx(f.service, "confirmPayment", [terms.orderId, nextCep()]));
}

const { version } = (await import("solc/package.json", { with: { type: "json" } })).default;
const table = rows.map((r) => `| \`${r.fn}\` | ${r.scenario} | ${r.gas.toLocaleString("en-US")} |`).join("\n");
const markdown = `# Gas of OfframpEscrow

Measured, not estimated: \`npm run gas\` runs [\`scripts/gas-report.ts\`](../scripts/gas-report.ts), which
compiles the contracts, deploys them on an in-process Hardhat network (EDR, chain 31337, its default
hardfork) with the test fixture, runs each function once in the scenario named, and writes the
\`gasUsed\` of each transaction receipt here. Figures include the 21,000 base cost and calldata; runs
differ by a few dozen gas at most, from calldata content (random order ids, signatures, timestamps).
Compiler: solc ${version} (solc-js), optimizer on, 200 runs, EVM target cancun.

Unless the scenario says otherwise, every payee already holds some USDC (steady state); a first credit
to an empty balance costs about 17,000 more per recipient (last row). On an L2 the fee is dominated by
the L1 data cost of the calldata, which this table does not show.

| Function | Scenario | Gas used |
|---|---|---:|
${table}
`;
await writeFile(output, markdown);
console.log(`wrote ${path.relative(root, output)}`);
console.log(markdown);
await f.connection.close();
