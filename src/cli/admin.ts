// `npm run admin -- <group> <command> ...`: the admin API on the command line (decisions section 12).
// Command groups live in src/cli/admin/, one module each; see src/cli/admin/run.ts.
import { runAdminCli } from "./admin/run.ts";

process.exitCode = await runAdminCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
