import { MAX_DELAY_MS, parseDuration, type Duration } from './duration.js';
import { ConfigError } from './errors.js';
import { checkInteger, checkRowId } from './input/integer.js';
import { INTEGER_RANGES } from './input/limits.js';
import { checkName } from './input/text.js';
import { checkOptionKeys, optionKeys } from './input/options.js';
import { taskTable, type LeasedTable, type TaskRow } from './leased-table.js';
import type { Executor } from './sql/execute.js';
import { leaseClaim } from './sql/lease-claim.js';
import { leaseExtendMany } from './sql/lease-extend-many.js';
import { leaseFinalizeMany } from './sql/lease-finalize-many.js';
import { tokenKey, type Claimed } from './sql/lease-row.js';
import { toDead, toDeferred, toDone, toRetry, type Transition } from './transition.js';

/** Which table a primitive works on: core's `task` table in `schema`, or any leased `table`. */
export interface TableOptions<Row = TaskRow> {
  /** Schema of core's task table. @defaultValue 'leasehold' */
  schema?: string;
  /** A table described with `defineLeasedTable`; overrides `schema`. */
  table?: LeasedTable<Row>;
}

/** Options of {@link claim}. */
export interface ClaimOptions<Row = TaskRow> extends TableOptions<Row> {
  /** Recorded as `lease_owner`, for people. */
  owner: string;
  /** Most tasks to take. */
  batch: number;
  /** Lease length: ms or an `ms` string. */
  lease: Duration;
  /** Only tasks with these names. */
  names?: readonly string[];
}

/** The fencing token a state change must present. */
export interface LeaseToken {
  readonly id: string;
  readonly leaseVersion: number;
}

/** @internal */
export function resolveTable<Row>(options: TableOptions<Row>): LeasedTable<Row> {
  return options.table ?? (taskTable(options.schema) as unknown as LeasedTable<Row>);
}

/** Checks an owner name: a name like any other (see `checkName`). @internal */
export function checkOwner(owner: unknown): string {
  return checkName(owner, 'owner');
}

/**
 * Checks a claim's name filter. A name that breaks the text rule could not name a task: NUL
 * would fail the claim statement, and a lone surrogate would match a task named with U+FFFD.
 * @internal
 */
export function checkNames(names: readonly string[] | undefined, option = 'names'): readonly string[] | undefined {
  if (names === undefined) return undefined;
  if (!Array.isArray(names)) throw new ConfigError(option, `Expected \`${option}\` to be an array of task names`);
  return names.map((name, i) => checkName(name, `${option}[${i}]`));
}

const TABLE_KEYS = ['schema', 'table'] as const;
const CLAIM_OPTIONS = optionKeys<ClaimOptions>()('claim', [...TABLE_KEYS, 'owner', 'batch', 'lease', 'names']);
const TABLE_OPTIONS = optionKeys<TableOptions>()('markDone', TABLE_KEYS);
const RESCHEDULE_OPTIONS = optionKeys<RescheduleOptions>()('reschedule', [...TABLE_KEYS, 'delay', 'error', 'refundAttempt']);
const MARK_DEAD_OPTIONS = optionKeys<TableOptions & { error: string }>()('markDead', [...TABLE_KEYS, 'error']);
const EXTEND_OPTIONS = optionKeys<TableOptions & { lease: Duration }>()('extendLease', [...TABLE_KEYS, 'lease']);

/**
 * Reaps expired last attempts, then claims up to `batch` due tasks, in one short transaction.
 * Returns them sorted by id; nothing stays locked or open while you work on them.
 *
 * @example
 * const tasks = await claim(db, { owner: 'worker-1', batch: 10, lease: '60s' });
 */
export async function claim<Row = TaskRow>(executor: Executor, options: ClaimOptions<Row>): Promise<Claimed<Row>[]> {
  checkOptionKeys(options, CLAIM_OPTIONS);
  const owner = checkOwner(options.owner);
  const batch = checkInteger(options.batch, 'batch', INTEGER_RANGES.batch);
  const leaseMs = parseDuration(options.lease, 'lease');
  const names = checkNames(options.names);
  const table = resolveTable(options);
  const { claimed } = await leaseClaim(executor, table, { owner, batch, leaseMs, names });
  return claimed;
}

/** Checks a fencing token given by a caller: a bigint id and a whole, non-negative version. @internal */
export function checkToken(token: LeaseToken): LeaseToken {
  checkRowId(token?.id, 'id');
  checkInteger(token.leaseVersion, 'leaseVersion', INTEGER_RANGES.leaseVersion);
  return token;
}

async function finalizeOne(executor: Executor, token: LeaseToken, transition: Transition, options: TableOptions<unknown>) {
  checkToken(token);
  const [result] = await leaseFinalizeMany(executor, resolveTable(options), [
    { id: token.id, leaseVersion: token.leaseVersion, transition },
  ]);
  return result?.won ?? false;
}

/**
 * Fenced: marks a claimed task done. False means the lease moved on (another worker took the
 * task), and nothing was written.
 */
export async function markDone(executor: Executor, token: LeaseToken, options: TableOptions<unknown> = {}): Promise<boolean> {
  checkOptionKeys(options, TABLE_OPTIONS);
  return finalizeOne(executor, token, toDone(), options);
}

/** Options of {@link reschedule}. */
export interface RescheduleOptions extends TableOptions<unknown> {
  /** When the task may run again, from now. */
  delay: Duration;
  /** Stored in `last_error`. */
  error: string;
  /** Give back the attempt this claim took (a defer, not a failure). @defaultValue false */
  refundAttempt?: boolean;
}

/** Fenced: puts a claimed task back to pending after `delay`. False when the lease moved on. */
export async function reschedule(executor: Executor, token: LeaseToken, options: RescheduleOptions): Promise<boolean> {
  checkOptionKeys(options, RESCHEDULE_OPTIONS);
  const delayMs = parseDuration(options.delay, 'delay', { allowZero: true, max: MAX_DELAY_MS });
  const transition = options.refundAttempt ? toDeferred(delayMs, options.error) : toRetry(delayMs, options.error);
  return finalizeOne(executor, token, transition, options);
}

/** Fenced: marks a claimed task dead with `error`. False when the lease moved on. */
export async function markDead(
  executor: Executor,
  token: LeaseToken,
  options: TableOptions<unknown> & { error: string },
): Promise<boolean> {
  checkOptionKeys(options, MARK_DEAD_OPTIONS);
  return finalizeOne(executor, token, toDead(options.error), options);
}

/** Fenced: extends a claimed task's lease to `now() + lease`. False when the lease moved on. */
export async function extendLease(
  executor: Executor,
  token: LeaseToken,
  options: TableOptions<unknown> & { lease: Duration },
): Promise<boolean> {
  checkToken(token);
  checkOptionKeys(options, EXTEND_OPTIONS);
  const leaseMs = parseDuration(options.lease, 'lease');
  const extended = await leaseExtendMany(executor, resolveTable(options), [
    { id: token.id, leaseVersion: token.leaseVersion, leaseMs },
  ]);
  return extended.has(tokenKey(token));
}
