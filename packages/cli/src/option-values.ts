import { parseDuration } from '@leasehold/core/internal';
import { UsageError } from './errors.js';

/**
 * A duration option's value in ms. A bare number is ms for the library; on a command line "7"
 * more likely means a forgotten unit, so it is refused, except 0. `examples` go in the message.
 */
export function durationOf(value: string, option: string, allowZero: boolean, examples = '500ms, 30s, 15m'): number {
  if (/^\d+$/.test(value) && value !== '0') throw new UsageError(`${option} needs a unit, e.g. ${examples} (got "${value}")`);
  return checked(() => parseDuration(value === '0' ? 0 : value, option, { allowZero }), option);
}

/** Runs a library check of an option's value; its error becomes a `UsageError` naming the option. */
export function checked<T>(fn: () => T, option: string): T {
  try {
    return fn();
  } catch (error) {
    throw new UsageError(`${option}: ${(error as Error).message.replaceAll('`', '')}`);
  }
}
