import type { FigureResult } from "../lib/report.ts";
import type { BenchStack } from "../lib/stack.ts";

export interface FigureContext {
  stack: BenchStack;
  quick: boolean;
  log(line: string): void;
}

export type FigureOutcome = Omit<FigureResult, "seconds" | "target" | "profile">;

/** A figure's target from the issue-15 table. */
export interface FigureTarget {
  /** The target in the words. */
  text: string;
  /** Whether the outcome meets it; null when the figure was not measured. */
  met(outcome: FigureOutcome): boolean | null;
}

export interface FigureSpec {
  id: number;
  key: string;
  title: string;
  target: FigureTarget;
  run(context: FigureContext): Promise<FigureOutcome>;
}

/** A number from a measure's detail, or null. */
export function detailNumber(measure: FigureOutcome["figure"], key: string): number | null {
  const value = measure?.detail?.[key];
  return typeof value === "number" ? value : null;
}

/** `check` over the values, or null when any is missing. */
export function meets(values: (number | null | undefined)[], check: (...values: number[]) => boolean): boolean | null {
  if (values.some((value) => value === null || value === undefined || Number.isNaN(value))) return null;
  return check(...(values as number[]));
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
