import { statSync } from "node:fs";

// The Chromium the browser tests drive (decisions section 16: `npm test` needs nothing installed):
// CHROMIUM_PATH when set; else the system's (Debian's `chromium` package); else the one `npm install`
// brought, @sparticuz/chromium, a headless Chromium shipped compressed inside the npm package (no download),
// unpacked on first use to /tmp/chromium (about 3 s) and reused after. It needs only libnss3 and libnspr4
// beside glibc. scripts/test-service.ts resolves it once before a run, so parallel files do not unpack it twice.

const SYSTEM_CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** A regular executable file (a path hidden by a bind mount of /dev/null is not one). */
function executable(file: string): boolean {
  try {
    const stat = statSync(file);
    return stat.isFile() && (stat.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

export async function chromiumExecutable(): Promise<string> {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    if (!executable(configured)) throw new Error(`CHROMIUM_PATH is ${configured}, which is not an executable file`);
    return configured;
  }
  const system = SYSTEM_CHROMIUM.find(executable);
  if (system) return system;
  const { default: bundled } = await import("@sparticuz/chromium");
  return bundled.executablePath();
}
