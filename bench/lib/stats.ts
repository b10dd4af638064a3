// Small statistics helpers: nearest-rank percentiles over raw samples, rounding for the report.

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  return samples.reduce((sum, value) => sum + value, 0) / samples.length;
}

/** Rounds to `digits` decimals (keeps NaN as null for JSON). */
export function round(value: number, digits = 1): number | null {
  if (!Number.isFinite(value)) return null;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export interface LatencySummary {
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

/** p50/p95/p99/max in milliseconds, rounded to 0.1 ms. */
export function summarize(samplesMs: readonly number[]): LatencySummary {
  return {
    count: samplesMs.length,
    p50: round(percentile(samplesMs, 50)),
    p95: round(percentile(samplesMs, 95)),
    p99: round(percentile(samplesMs, 99)),
    max: round(samplesMs.length ? Math.max(...samplesMs) : Number.NaN),
  };
}

/** High-resolution wall clock in milliseconds (monotonic). */
export function nowMs(): number {
  return performance.now();
}
