import { MAX_DELAY_MS, parseDuration, parseInteger, type Duration } from '../duration.js';
import { ConfigError } from '../errors.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import type { FinishedStatus } from '../sql/lease-purge-finished.js';

/**
 * What workers delete of their table's history, and how (see `docs/operations.md`, "Retention").
 * Every worker of a table takes turns: one at a time, whichever takes the table's turn in the
 * database, deletes the rows older than the ages of *its* options, so give every worker of a
 * table the same ones.
 */
export interface RetentionOptions {
  /**
   * Delete `done` rows this long after they finished (ms or e.g. `'7d'`); 0 deletes them at the
   * next turn, `false` keeps them. @defaultValue '7d'
   */
  done?: Duration | false;
  /** The same for `cancelled` rows (core's task table). @defaultValue '7d' */
  cancelled?: Duration | false;
  /**
   * The same for `dead` rows; their age counts from when their last attempt became due. Dead
   * rows of an ordering group stay whatever their age: they block their group until a person
   * decides. @defaultValue false: dead rows wait for a person (`leasehold dead`)
   */
  dead?: Duration | false;
  /** How often a turn comes round, across all workers of the table. @defaultValue '1m' */
  every?: Duration;
  /**
   * Rows per DELETE statement, each its own short transaction (some 20–40 ms at 5,000). A
   * batch's fixed work (its transaction, its plan, the delete trigger's two statements) is most
   * of a small one's: beside 10,000,000 rows, batches of 1,000 cost the server some 7 ms more
   * per 1,000 tasks processed, batches of 5,000 nothing measurable. @defaultValue 5000
   */
  batchSize?: number;
}

/** Checked retention settings: an age per status that leaves, in ms. @internal */
export interface RetentionSettings {
  readonly ages: ReadonlyArray<readonly [FinishedStatus, number]>;
  readonly everyMs: number;
  readonly batchSize: number;
}

/** The default age of done and cancelled rows: a week, as pg-boss keeps completed jobs. */
export const DEFAULT_RETENTION_AGE = '7d';

const RETENTION_OPTIONS = optionKeys<RetentionOptions>()('the worker\'s retention', ['done', 'cancelled', 'dead', 'every', 'batchSize']);

/**
 * Checks `retention` as a worker was given it: `false` turns it off for that worker, undefined
 * means the defaults. Throws ConfigError at the call that supplied a bad value.
 * @internal
 */
export function retentionSettings(options: RetentionOptions | false | undefined): RetentionSettings | undefined {
  if (options === false) return undefined;
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw new ConfigError('retention', 'Expected `retention` to be an object of ages (e.g. { done: \'7d\' }) or false');
  }
  checkOptionKeys(options, RETENTION_OPTIONS, 'retention.');
  const o = options ?? {};
  const age = (status: FinishedStatus, fallback: Duration | false): [FinishedStatus, number][] => {
    const value = o[status] === undefined ? fallback : o[status];
    if (value === false) return [];
    return [[status, parseDuration(value as Duration, `retention.${status}`, { allowZero: true, max: MAX_DELAY_MS })]];
  };
  const ages = [...age('done', DEFAULT_RETENTION_AGE), ...age('cancelled', DEFAULT_RETENTION_AGE), ...age('dead', false)];
  const everyMs = parseDuration(o.every ?? '1m', 'retention.every');
  const batchSize = parseInteger(o.batchSize ?? 5_000, 'retention.batchSize', 1, 100_000);
  if (ages.length === 0) return undefined;
  return Object.freeze({ ages: Object.freeze(ages), everyMs, batchSize });
}
