import { parseDuration, type Duration } from '../duration.js';
import { ConfigError } from '../errors.js';
import { checkInteger } from '../input/integer.js';
import { INTEGER_RANGES } from '../input/limits.js';
import { checkName } from '../input/text.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';

/** A rate: at most `limit` starts in any window of length `period`. */
export interface RateOptions {
  /** Most starts per period (1 to 10,000). */
  limit: number;
  /** The window's length: ms, or an `ms` string such as `'1s'` or `'1m'`. */
  period: Duration;
}

/** Options of {@link defineLimit}; give at least one. */
export interface LimitOptions {
  /** At most this many tasks of the limit run at once, across all workers (1 to 10,000). */
  concurrency?: number;
  /**
   * At most this many run at once per key (a tenant, an account): the `limitKey` given to
   * `enqueue`, which then requires one. The unordered sibling of ordered groups.
   */
  concurrencyPerKey?: number;
  /** At most `limit` tasks start in any `period`, across all workers. */
  rate?: RateOptions;
  /** At most `limit` tasks start in any `period` per key (see `concurrencyPerKey`). */
  ratePerKey?: RateOptions;
}

/** A checked rate. */
export interface Rate {
  readonly limit: number;
  readonly periodMs: number;
}

/** A checked limit: what `defineTask({ limit })` takes. */
export interface LimitDefinition {
  readonly kind: 'limit';
  /** Unique name: the limit's row in the `task_limit` table. */
  readonly name: string;
  readonly concurrency: number | null;
  readonly concurrencyPerKey: number | null;
  readonly rate: Rate | null;
  readonly ratePerKey: Rate | null;
  /** Whether it counts per key, so that `enqueue` needs a `limitKey`. */
  readonly keyed: boolean;
}

/**
 * Declares a limit that one or more task types run under: how many of their tasks run at once
 * and how many start per period, in all and per key, across every worker process. The claim
 * enforces it in the database; a task over the limit waits, spending no attempt. Workers record
 * the values when they start (a change takes effect at the next worker start). Checked here: a
 * bound that is not a whole number in range, or a period that is not a positive whole number of
 * ms, is a `ConfigError` naming the option.
 *
 * @example
 * const partnerApi = defineLimit('partner-api', { concurrency: 3, rate: { limit: 50, period: '1s' } });
 * const sync = defineTask('sync-account', { limit: partnerApi, handler: async (p) => callPartner(p) });
 */
export function defineLimit(name: string, options: LimitOptions): LimitDefinition {
  checkName(name, 'name', 'the limit name');
  if (typeof options !== 'object' || options === null) throw new ConfigError('options', `Expected options for limit "${name}"`);
  checkOptionKeys(options, LIMIT_OPTIONS, '', `defineLimit "${name}"`);
  const concurrency = options.concurrency === undefined ? null : checkInteger(options.concurrency, 'concurrency', INTEGER_RANGES.concurrency);
  const concurrencyPerKey =
    options.concurrencyPerKey === undefined ? null : checkInteger(options.concurrencyPerKey, 'concurrencyPerKey', INTEGER_RANGES.concurrency);
  const rate = options.rate === undefined ? null : checkRate(options.rate, 'rate');
  const ratePerKey = options.ratePerKey === undefined ? null : checkRate(options.ratePerKey, 'ratePerKey');
  if (concurrency === null && concurrencyPerKey === null && rate === null && ratePerKey === null) {
    throw new ConfigError('concurrency', `Expected limit "${name}" to set at least one of \`concurrency\`, \`concurrencyPerKey\`, \`rate\`, \`ratePerKey\``);
  }
  const keyed = concurrencyPerKey !== null || ratePerKey !== null;
  return Object.freeze({ kind: 'limit', name, concurrency, concurrencyPerKey, rate, ratePerKey, keyed });
}

const LIMIT_OPTIONS = optionKeys<LimitOptions>()('defineLimit', ['concurrency', 'concurrencyPerKey', 'rate', 'ratePerKey'], {
  limitKey: 'limitKey belongs on enqueue',
  tasks: 'a limit names no tasks: give it to defineTask as `limit`',
});
const RATE_OPTIONS = optionKeys<RateOptions>()('a rate', ['limit', 'period']);

function checkRate(value: unknown, option: string): Rate {
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError(option, `Expected \`${option}\` to be { limit, period }`);
  }
  checkOptionKeys(value, RATE_OPTIONS, `${option}.`, 'defineLimit');
  const { limit, period } = value as Partial<RateOptions>;
  const checkedLimit = checkInteger(limit, `${option}.limit`, INTEGER_RANGES.rateLimit);
  const periodMs = parseDuration(period as Duration, `${option}.period`);
  // kept as whole ms in the database (a bigint column)
  if (!Number.isInteger(periodMs)) throw new ConfigError(`${option}.period`, `Expected \`${option}.period\` to be a whole number of ms, got ${periodMs}`);
  return Object.freeze({ limit: checkedLimit, periodMs });
}

/** Whether `value` looks made by {@link defineLimit} (a shape check, so a second copy of the package passes). @internal */
export function isLimitDefinition(value: unknown): value is LimitDefinition {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'limit' && typeof (value as { name?: unknown }).name === 'string';
}
