// Statistics over rounds and over latency samples.

const finite = (values: readonly number[]) => values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);

export function median(values: readonly number[]): number {
  const v = finite(values);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** Nearest-rank percentile, `p` in 0..100. */
export function percentile(values: readonly number[], p: number): number {
  const v = finite(values);
  if (v.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * v.length);
  return v[Math.min(v.length - 1, Math.max(0, rank - 1))]!;
}

export function min(values: readonly number[]): number {
  const v = finite(values);
  return v.length ? v[0]! : NaN;
}

export function max(values: readonly number[]): number {
  const v = finite(values);
  return v.length ? v[v.length - 1]! : NaN;
}

/** 12,345 / 1,234 / 123 / 12.3 / 1.23 / 0.123: about three significant figures. */
export function fmt(x: number): string {
  if (!Number.isFinite(x)) return 'n/a';
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(3);
}

export const hrtimeMs = (from: bigint, to: bigint): number => Number(to - from) / 1e6;
