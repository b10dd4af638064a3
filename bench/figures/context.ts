import type { FigureResult } from "../lib/report.ts";
import type { BenchStack } from "../lib/stack.ts";

export interface FigureContext {
  stack: BenchStack;
  quick: boolean;
  log(line: string): void;
}

export type FigureOutcome = Omit<FigureResult, "seconds">;

export interface FigureSpec {
  id: number;
  key: string;
  title: string;
  run(context: FigureContext): Promise<FigureOutcome>;
}

/** "0.42 x reference" with two significant decimals. */
export function ratio(figure: number | null, reference: number | null, word = "reference"): string | null {
  if (figure === null || reference === null || reference === 0) return null;
  const value = figure / reference;
  return `${value >= 10 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toPrecision(2)} x ${word}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
