import { createRequire } from "node:module";
import { defineConfig } from "hardhat/config";
import hardhatViem from "@nomicfoundation/hardhat-viem";
import hardhatNodeTestRunner from "@nomicfoundation/hardhat-node-test-runner";

// Offline compiler: Hardhat cannot download solc here, so we point it at the solc-js (WASM) build
// shipped in the `solc` npm package (pinned to 0.8.28 in package.json). `version` must equal the
// installed solc; Hardhat checks the version string reported by the file at `path`.
const require = createRequire(import.meta.url);
const SOLC_VERSION = "0.8.28";
const solcPath = require.resolve("solc/soljson.js");

export default defineConfig({
  plugins: [hardhatViem, hardhatNodeTestRunner],
  solidity: {
    version: SOLC_VERSION,
    path: solcPath,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "cancun",
    },
  },
  networks: {
    // The network `hardhat node` serves (src/stack/local-node.ts: the sandbox chain of `npm start` and of
    // the trade tests). With automine each transaction gets a block of its own, and by default a block's
    // timestamp must exceed its parent's: a burst of transactions then pushes chain time one second per
    // block ahead of the wall clock, for good (the node keeps the offset), and deposit deadlines signed
    // from the wall clock revert. Blocks may share a second instead, so chain time follows the wall clock
    // (decisions section 1; test/chain/local-clock.test.ts).
    node: { type: "edr-simulated", chainId: 31337, allowBlocksWithSameTimestamp: true },
  },
  paths: {
    sources: "contracts",
    tests: { nodejs: "test/escrow" },
  },
});
