import ms from 'ms';
import { ConfigError } from './errors.js';

/** A duration: milliseconds, or an `ms` string such as `'30s'` or `'5m'`. */
export type Duration = number | string;

/** Longest duration a timer can wait: Node fires longer `setTimeout`s after 1 ms. ≈ 24.8 days. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Longest delay stored in the database (run-at, backoff, defer): 100 years. */
export const MAX_DELAY_MS = 100 * 365 * 86_400_000;

/**
 * Parses a {@link Duration} into milliseconds, or throws a `ConfigError` naming `option`.
 * Rejects NaN, Infinity, negatives, (unless `allowZero`) zero, and anything above `max`
 * (by default {@link MAX_TIMER_MS}, since most durations drive a timer).
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
    throw new ConfigError(option, `Expected \`${option}\` to be a finite duration (ms or e.g. '30s'), got ${describe(value)}`);
  }
  if (parsed < 0 || (!allowZero && parsed === 0)) {
    const want = allowZero ? 'zero or positive' : 'positive';
    throw new ConfigError(option, `Expected \`${option}\` to be a ${want} duration, got ${describe(value)}`);
  }
  if (parsed > max) {
    throw new ConfigError(option, `Expected \`${option}\` to be at most ${max} ms, got ${describe(value)}`);
  }
  return parsed;
}

/** Checks a whole number within bounds, or throws a `ConfigError` naming `option`. */
export function parseInteger(value: unknown, option: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
    throw new ConfigError(option, `Expected \`${option}\` to be an integer ${range}, got ${describe(value)}`);
  }
  return value;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}
