/** Bounds of the full-jitter backoff, in milliseconds. */
export interface BackoffPolicy {
  /** Delay scale of the first retry. @defaultValue 1000 */
  readonly baseMs: number;
  /** Largest delay ever chosen. @defaultValue 300000 */
  readonly capMs: number;
}

/** The design article's defaults: base 1 s, cap 5 min. */
export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 1_000, capMs: 300_000 });

/**
 * AWS "Full Jitter": a delay drawn uniformly from `[0, min(cap, base · 2^attempt))`, so retries
 * after an outage spread out instead of arriving together.
 *
 * @param attempt - attempts made so far (1 after the first failure)
 * @param random - a source of numbers in `[0, 1)`; pass a fixed one in tests
 * @example
 * const delayMs = fullJitterBackoff(3, { baseMs: 1000, capMs: 60_000 }); // 0 … 8000
 */
export function fullJitterBackoff(
  attempt: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  // 2^attempt overflows to Infinity for large attempts; min() with the cap keeps it finite
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}
