import ms from 'ms';
import { describeValue } from './input/describe-value.js';
import { INPUT_LIMITS } from './input/limits.js';
import { ConfigError } from './leasehold-error.js';

// The integer check moved to input/ with the other checks; re-exported for existing importers.
export { parseInteger } from './input/integer.js';

/** A duration: milliseconds, or an `ms` string such as `'30s'` or `'5m'`. */
export type Duration = number | string;

/** Longest duration a timer can wait: Node fires longer `setTimeout`s after 1 ms. ≈ 24.8 days. */
export const MAX_TIMER_MS = INPUT_LIMITS.timerMs;

/** Longest delay stored in the database (run-at, backoff, defer): 100 years. */
export const MAX_DELAY_MS = INPUT_LIMITS.delayMs;

/**
 * Parses a {@link Duration} into milliseconds, or throws a `ConfigError` naming `option`.
 * Rejects NaN, Infinity, negatives, (unless `allowZero`) zero, and anything above `max`
 * (by default {@link MAX_TIMER_MS}, since most durations drive a timer).
 *
 * @example
 * const leaseMs = parseDuration(options.lease ?? '60s', 'lease');
 */
export function parseDuration(
  value: Duration,
  option: string,
  { allowZero = false, max = MAX_TIMER_MS }: { allowZero?: boolean; max?: number } = {},
): number {
  let parsed: number | undefined;
  if (typeof value === 'number') parsed = value;
  else if (typeof value === 'string' && value.trim() !== '') {
    // ms() returns undefined for text it does not understand
    const result = ms(value as ms.StringValue) as number | undefined;
    parsed = typeof result === 'number' ? result : undefined;
  }
  if (parsed === undefined || !Number.isFinite(parsed)) {
    throw new ConfigError(option, `Expected \`${option}\` to be a finite duration (ms or e.g. '30s'), got ${describeValue(value)}`);
  }
  if (parsed < 0 || (!allowZero && parsed === 0)) {
    const want = allowZero ? 'zero or positive' : 'positive';
    throw new ConfigError(option, `Expected \`${option}\` to be a ${want} duration, got ${describeValue(value)}`);
  }
  if (parsed > max) {
    throw new ConfigError(option, `Expected \`${option}\` to be at most ${max} ms, got ${describeValue(value)}`);
  }
  return parsed;
}
