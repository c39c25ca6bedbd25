import { ConfigError } from '../leasehold-error.js';
import { describeValue } from './describe-value.js';
import { MAX_ROW_ID, type IntegerRange } from './limits.js';

/**
 * Checks a whole number within `min`..`max`, or throws a `ConfigError` naming `option`.
 *
 * @example
 * const batch = parseInteger(options.batch ?? 50, 'batch', 1, 10_000);
 */
export function parseInteger(value: unknown, option: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
    throw new ConfigError(option, `Expected \`${option}\` to be an integer ${range}, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * {@link parseInteger} against one of `INTEGER_RANGES`.
 * @internal
 */
export function checkInteger(value: unknown, option: string, range: IntegerRange): number {
  return parseInteger(value, option, range.min, range.max);
}

const ROW_ID = /^[1-9][0-9]{0,18}$/;

/**
 * True for a row id as text: a positive PostgreSQL `bigint` in decimal, without sign or leading
 * zeros. Nineteen digits can still overflow a `bigint` (error 22003), hence the second test.
 * @internal
 */
export function isRowId(value: unknown): value is string {
  return typeof value === 'string' && ROW_ID.test(value) && BigInt(value) <= MAX_ROW_ID;
}

/**
 * Checks a row id given as text (as leasehold hands ids out), or throws a `ConfigError` naming
 * `option`.
 * @internal
 */
export function checkRowId(value: unknown, option: string): string {
  if (!isRowId(value)) {
    throw new ConfigError(option, `Expected \`${option}\` to be a row id (a positive integer string of at most 19 digits), got ${describeValue(value)}`);
  }
  return value;
}
