// npm skips optional platform binaries whose `engines` needs Node 22+ when npm itself runs on an older
// system Node (Hardhat's EDR is one). After the first pass has installed the pinned `node` package,
// this re-runs the install under that Node 24 so those binaries land too. A no-op when nothing is missing.
import { execFileSync } from "node:child_process";

const major = Number(process.versions.node.split(".")[0]);

// Checked in a child process: a failed require inside this one would be remembered.
function missingEdrBinary() {
  try {
    execFileSync(process.execPath, ["-e", "require('@nomicfoundation/edr')"], { stdio: "ignore" });
    return false;
  } catch {
    return true;
  }
}

if (missingEdrBinary()) {
  if (major < 22) {
    console.error("ensure-platform-binaries: running under Node", process.version, "- expected the pinned Node 24");
    process.exit(1);
  }
  const npmCli = process.env.npm_execpath;
  if (!npmCli) {
    console.error("ensure-platform-binaries: run through npm (npm_execpath unset)");
    process.exit(1);
  }
  console.log("ensure-platform-binaries: installing optional platform binaries under Node", process.version);
  execFileSync(process.execPath, [npmCli, "install", "--ignore-scripts", "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (missingEdrBinary()) {
    console.error("ensure-platform-binaries: Hardhat EDR binary still missing");
    process.exit(1);
  }
}
