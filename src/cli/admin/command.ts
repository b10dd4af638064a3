import type { ParseArgsOptionsConfig } from "node:util";
import type { AdminClient } from "./http.ts";

// One module per command group (partners, and later orders, deliveries, stats...), each a CommandGroup
// listed in src/cli/admin/run.ts. A command declares its options for node:util parseArgs and returns
// what is printed as JSON.

export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandInput {
  client: AdminClient;
  /** Positional arguments after the command name (e.g. a partner id). */
  args: string[];
  /** Parsed options, by their long names as declared. */
  options: OptionValues;
}

export interface Command {
  name: string;
  summary: string;
  /** Shown in help: `partners get <id>`. */
  usage: string;
  /** Positional arguments the command takes, in order (all required). */
  args?: string[];
  options?: ParseArgsOptionsConfig;
  run(input: CommandInput): Promise<unknown>;
}

export interface CommandGroup {
  name: string;
  summary: string;
  commands: Command[];
  /** The command run when none is named (`stats`, `revenue --month 2026-11`). */
  defaultCommand?: string;
}
