// Decisions section 1: on the local chain, block timestamps follow the wall clock. Hardhat's automine
// gives every transaction a block of its own, and by default each block's timestamp must exceed the
// previous one, so a burst of transactions (hundreds a second) pushed chain time ahead of real time and
// kept it there: deadlines signed from the wall clock then reverted. After a burst of hundreds of
// transactions, the chain's clock must be within a couple of seconds of the wall clock.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createPublicClient, createWalletClient, defineChain, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { devAccounts, startLocalChain, type LocalChain } from "../../src/stack/local-node.ts";
import { LOCAL_CHAIN_ID } from "../../src/config.ts";

const BURST = 400;
let chain: LocalChain;

before(async () => {
  chain = await startLocalChain({ port: 0 });
});

after(async () => {
  await chain?.stop();
});

test(`a burst of ${BURST} transactions leaves the local chain's clock within 2 s of the wall clock`, async () => {
  const localChain = defineChain({ id: LOCAL_CHAIN_ID, name: "local", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chain.rpcUrl] } } });
  const transport = http(chain.rpcUrl);
  const client = createPublicClient({ chain: localChain, transport });
  const account = privateKeyToAccount(devAccounts[9].privateKey);
  const wallet = createWalletClient({ account, chain: localChain, transport });
  const first = await client.getTransactionCount({ address: account.address });
  const gasPrice = await client.getGasPrice();
  const raws: `0x${string}`[] = [];
  for (let i = 0; i < BURST; i += 1) {
    raws.push(await wallet.signTransaction({ to: devAccounts[8].address, value: parseEther("0.001"), nonce: first + i, gas: 21_000n, maxFeePerGas: gasPrice * 3n, maxPriorityFeePerGas: 1n, chain: localChain }));
  }
  const startedAt = Date.now();
  // Sent as fast as the node takes them, one after the other: with automine a nonce that arrives before
  // its predecessor is refused ("Nonce too high"), so several in flight would race each other.
  for (const raw of raws) await client.sendRawTransaction({ serializedTransaction: raw });
  const sentIn = Date.now() - startedAt;
  const latest = await client.getBlock({ blockTag: "latest" });
  const wallSeconds = Date.now() / 1000;
  const aheadAfterBurst = Number(latest.timestamp) - wallSeconds;
  assert.ok(latest.number >= BigInt(BURST), `the burst was mined (${latest.number} blocks, sent in ${sentIn} ms)`);
  assert.ok(aheadAfterBurst < 2, `after ${BURST} transactions in ${sentIn} ms the latest block is ${aheadAfterBurst.toFixed(1)} s ahead of the wall clock`);

  // And it stays so: the next transaction's block is stamped with the wall clock, not with an offset the burst left behind.
  // (Automine: the block exists when eth_sendRawTransaction answers.)
  const sentAt = Date.now() / 1000;
  const hash = await wallet.sendTransaction({ to: devAccounts[8].address, value: 1n, chain: localChain });
  const answeredAt = Date.now() / 1000;
  const receipt = await client.getTransactionReceipt({ hash });
  const block = await client.getBlock({ blockNumber: receipt.blockNumber });
  const stamp = Number(block.timestamp);
  // Never ahead; behind by a few seconds at most (a node starved of CPU on a loaded machine lags a little).
  assert.ok(stamp < answeredAt + 2, `the block after the burst is stamped ${stamp}, ahead of its sending (${sentAt.toFixed(1)} to ${answeredAt.toFixed(1)})`);
  assert.ok(stamp > sentAt - 10, `the block after the burst is stamped ${stamp}, far behind its sending (${sentAt.toFixed(1)} to ${answeredAt.toFixed(1)})`);
  // Timestamps never go backwards.
  const previous = await client.getBlock({ blockNumber: receipt.blockNumber - 1n });
  assert.ok(block.timestamp >= previous.timestamp);
});
