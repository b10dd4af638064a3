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
  paths: {
    sources: "contracts",
    tests: { nodejs: "test/escrow" },
  },
});
