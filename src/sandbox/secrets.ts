// The secrets the sandbox's simulated outside services share with the service's clients: the KYC
// provider's API key and callback signing secret, and the central bank's SIE token. Nothing secret is
// written in the code (decisions section 19): they are generated once per DATA_DIR and kept in
// `$DATA_DIR/sandbox-secrets.json` (mode 0600), so every instance on that DATA_DIR agrees.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

export interface SandboxSecrets {
  kycApiKey: string;
  kycSecret: string;
  banxicoToken: string;
}

function generate(): SandboxSecrets {
  return {
    kycApiKey: `sbx_kyc_${randomBytes(16).toString("hex")}`,
    kycSecret: randomBytes(32).toString("hex"),
    banxicoToken: randomBytes(32).toString("hex"),
  };
}

function parse(file: string, text: string): SandboxSecrets {
  const value = JSON.parse(text) as Partial<SandboxSecrets>;
  if (typeof value.kycApiKey !== "string" || typeof value.kycSecret !== "string" || typeof value.banxicoToken !== "string") {
    throw new Error(`${file} is damaged: delete it and a new set of sandbox secrets is generated`);
  }
  return { kycApiKey: value.kycApiKey, kycSecret: value.kycSecret, banxicoToken: value.banxicoToken };
}

/** The DATA_DIR's sandbox secrets, generated on first use. Safe when several processes start at once. */
export async function sandboxSecrets(dataDir: string): Promise<SandboxSecrets> {
  const file = path.resolve(dataDir, "sandbox-secrets.json");
  try {
    return parse(file, await readFile(file, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  await mkdir(path.dirname(file), { recursive: true });
  const secrets = generate();
  try {
    // `wx`: the first writer wins; a process that loses the race reads the winner's secrets.
    await writeFile(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    return secrets;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  // The winner may not have finished writing: read until the file is whole.
  for (let attempt = 0; ; attempt++) {
    try {
      return parse(file, await readFile(file, "utf8"));
    } catch (error) {
      if (attempt >= 50 || !(error instanceof SyntaxError)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
