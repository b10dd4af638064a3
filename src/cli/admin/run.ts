import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import type { Command, CommandGroup } from "./command.ts";
import { AdminApiError, createAdminClient, DEFAULT_URL, resolveConnection, UsageError, type Env } from "./http.ts";
import { deliveryCommands, machineCommands, orderCommands, revenueCommands, statsCommands } from "./orders.ts";
import { partnerCommands } from "./partners.ts";

/** Every command group of `npm run admin`; a new group is one module under src/cli/admin/ added here. */
export const COMMAND_GROUPS: CommandGroup[] = [partnerCommands, orderCommands, deliveryCommands, statsCommands, machineCommands, revenueCommands];

const GLOBAL_OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

export interface CliIo {
  env: Env;
  cwd?: string;
  stdout(text: string): void;
  stderr(text: string): void;
  fetch?: typeof fetch;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

function overview(): string {
  const lines = [
    "Usage: npm run admin -- <group> <command> [arguments] [--url <service url>] [--token <admin token>]",
    "",
    `The service is --url, else OFFRAMP_URL, else ${DEFAULT_URL}. The token is --token, else ADMIN_TOKEN,`,
    "else adminToken in $DATA_DIR/sandbox.json (written by npm start). Output is JSON; on failure the",
    "service's error body is printed on stderr and the exit code is 1 (2 for a usage mistake).",
    "",
  ];
  for (const group of COMMAND_GROUPS) {
    lines.push(`${group.name}: ${group.summary}`);
    for (const command of group.commands) lines.push(`  ${command.usage}`, `      ${command.summary}`);
  }
  return `${lines.join("\n")}\n`;
}

function commandHelp(group: CommandGroup, command: Command): string {
  return `Usage: npm run admin -- ${command.usage} [--url <service url>] [--token <admin token>]\n\n${command.summary}\n`;
}

/** Global options may also come before the group: `--url http://host:3000 partners list`. */
function leadingGlobals(argv: string[]): { rest: string[]; values: { url?: string; token?: string; help?: boolean } } {
  const tokens: string[] = [];
  let index = 0;
  while (index < argv.length && argv[index]!.startsWith("-")) {
    const arg = argv[index]!;
    const takesValue = arg === "--url" || arg === "--token";
    tokens.push(arg);
    if (takesValue && index + 1 < argv.length) tokens.push(argv[index + 1]!);
    index += takesValue ? 2 : 1;
  }
  const { values } = parseArgs({ args: tokens, options: GLOBAL_OPTIONS, strict: true, allowPositionals: false });
  return { rest: argv.slice(index), values };
}

/** Runs one admin command; resolves to the process exit code. */
export async function runAdminCli(argv: string[], io: CliIo): Promise<number> {
  try {
    const leading = leadingGlobals(argv);
    const [groupName, ...afterGroup] = leading.rest;
    if (groupName === undefined) {
      (leading.values.help ? io.stdout : io.stderr)(overview());
      return leading.values.help ? EXIT_OK : EXIT_USAGE;
    }
    const group = COMMAND_GROUPS.find((candidate) => candidate.name === groupName);
    if (!group) throw new UsageError(`Unknown command group "${groupName}"; groups: ${COMMAND_GROUPS.map((g) => g.name).join(", ")}`);
    // A group with a default command runs it when the next word is not a command name.
    const useDefault = group.defaultCommand !== undefined && !group.commands.some((candidate) => candidate.name === afterGroup[0]);
    const commandName = useDefault ? group.defaultCommand : afterGroup[0];
    const rest = useDefault ? afterGroup : afterGroup.slice(1);
    const command = group.commands.find((candidate) => candidate.name === commandName);
    if (!command) {
      if (commandName === undefined || commandName === "--help" || commandName === "-h") {
        (commandName ? io.stdout : io.stderr)(overview());
        return commandName ? EXIT_OK : EXIT_USAGE;
      }
      throw new UsageError(`Unknown command "${group.name} ${commandName}"; commands: ${group.commands.map((c) => c.name).join(", ")}`);
    }

    const parsed = (() => {
      try {
        return parseArgs({ args: rest, options: { ...GLOBAL_OPTIONS, ...command.options }, allowPositionals: true, strict: true });
      } catch (error) {
        throw new UsageError(`${(error as Error).message}\n\n${commandHelp(group, command).trimEnd()}`);
      }
    })();
    const options = parsed.values as Record<string, string | boolean | undefined>;
    if (options.help || leading.values.help) {
      io.stdout(commandHelp(group, command));
      return EXIT_OK;
    }
    const expected = command.args ?? [];
    if (parsed.positionals.length !== expected.length) {
      const what = expected.length === 0 ? "no arguments" : expected.map((name) => `<${name}>`).join(" ");
      throw new UsageError(`"${group.name} ${command.name}" takes ${what}\n\n${commandHelp(group, command).trimEnd()}`);
    }

    const connection = resolveConnection(
      { url: (options.url as string | undefined) ?? leading.values.url, token: (options.token as string | undefined) ?? leading.values.token },
      io.env,
      io.cwd,
    );
    const client = createAdminClient(connection, io.fetch);
    const result = await command.run({ client, args: parsed.positionals, options });
    io.stdout(`${JSON.stringify(result, null, 2)}\n`);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof AdminApiError) {
      io.stderr(`${typeof error.body === "string" ? error.body : JSON.stringify(error.body, null, 2)}\n`);
      return EXIT_FAILED;
    }
    if ((error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr(`${(error as Error).message}\n`);
      return EXIT_USAGE;
    }
    io.stderr(`${(error as Error).message}\n`);
    return EXIT_FAILED;
  }
}
