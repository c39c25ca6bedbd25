import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { TaskStatus } from '../task-status.js';
import type { Transition } from '../transition.js';
import { execute, executeCached, type Executor } from './execute.js';
import { fenceEach } from './fence.js';
import { doneSet, FEW_ROWS, finalizeFewDone, resultJsonOf } from './lease-finalize-few.js';
import { leaseLockFinishingGroups } from './lease-lock-groups.js';
import { leaseReadState } from './lease-read-state.js';
import { tokenKey, type Claimed } from './lease-row.js';
import { leaseSettleGroupsHanding } from './lease-settle-groups.js';
import { bigintArray } from './bigint-array.js';
import { tableRef } from './table-ref.js';
import { compareIds, type HeadHandoff } from './lease-claim.js';
import { inTransaction } from './transaction.js';
import { notifySleepers, WAKE_ONCE_FIRST, wakeLockCte, wakeOnceCtes } from './wake-sleepers.js';

/** One row to finalize: the fencing token its claim got, and where it goes. */
export interface FinalizeItem {
  readonly id: string;
  readonly leaseVersion: number;
  readonly transition: Transition;
  /**
   * The row's ordering group as its claim returned it: `null` for an unordered row. Leave it
   * out when unknown; the statement then looks it up (a grouped row that finishes must promote
   * its group's next row, which takes the group's lock).
   */
  readonly groupKey?: string | null;
  /**
   * The row's parent task (core's task table: a child spawned by a workflow), or null. A child
   * that ends may wake its parent (core migration 8's trigger locks the parent): the parents are
   * locked first, in id order, so two batches ending children of the same parents never deadlock.
   */
  readonly parentId?: string | null;
  /**
   * The row runs under a limit (its claim said so: `LeaseClaimResult.limitedIds`). Its write frees
   * a slot, which wakes the workers waiting for one: a write with such rows does that once, before
   * it reaches them, so that the trigger of core migration 7 calls its function for none of them
   * (migration 22). Left out, each such row calls it, as before.
   */
  readonly limited?: boolean;
}

/** Result per item, in input order. */
export interface FinalizeResult {
  readonly id: string;
  /** False: the fence refused the change (the lease moved on, or the row left `processing`). */
  readonly won: boolean;
  /**
   * The status written, when won. Refused: `'cancelled'` when the worker learned that
   * `cancelTask` ended the row at this very token (not a lost lease), else null.
   */
  readonly status: TaskStatus | null;
  /**
   * On the rows of a write that settled ordering groups: the lowest id of the next heads it made
   * claimable by any worker's claim (unblocked, not handed to the writer), or null when none.
   * Such a row may have any id, so the writer's claims then start at or below it; a write that
   * only emptied groups or handed their heads over moves no claim back. Absent when not known.
   */
  readonly unblockedFrom?: string | null;
}

export const DEFER_AGE_ERROR_PREFIX = 'defer age limit exceeded';

/**
 * Fenced finalize of many rows. Each row changes only
 * `WHERE id = $id AND status = 'processing' AND lease_version = $version`, against its own
 * token; `lease_until` is deliberately not checked, so an expired lease nobody took over still
 * finalizes. One statement, locking only the rows it updates — except when a row of an ordering
 * group goes `done`: its group's next row must become the head, so the groups are locked first
 * (`leaseLockFinishingGroups`), then the rows are written and the heads settled (`leaseSettleGroups`),
 * all in one transaction (the caller's when `executor` is one).
 */
export async function leaseFinalizeMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  items: readonly FinalizeItem[],
): Promise<FinalizeResult[]> {
  return (await finalizeMany(executor, table, items, undefined)).results;
}

/** What {@link leaseFinalizeManyHanding} did. */
export interface FinalizedBatch<Row> {
  /** Per item, in input order, as {@link leaseFinalizeMany} returns them. */
  readonly results: FinalizeResult[];
  /** Next heads of the finished rows' groups now leased to `handoff.owner` (see `leaseSettleGroupsHanding`). */
  readonly handed: Claimed<Row>[];
}

/**
 * {@link leaseFinalizeMany} by a worker that takes its finished rows' next heads itself, where
 * its own claim could (see `leaseSettleGroupsHanding`). The handed rows are leased once the
 * transaction commits: the caller runs them, or their leases run out and another worker takes
 * them over, as with any claim whose answer is lost.
 */
export async function leaseFinalizeManyHanding<Row>(
  executor: Executor,
  table: LeasedTable<Row>,
  items: readonly FinalizeItem[],
  handoff: HeadHandoff,
): Promise<FinalizedBatch<Row>> {
  return finalizeMany(executor, table, items, handoff);
}

async function finalizeMany<Row>(
  executor: Executor,
  table: LeasedTable<Row>,
  items: readonly FinalizeItem[],
  handoff: HeadHandoff | undefined,
): Promise<FinalizedBatch<Row>> {
  if (items.length === 0) return { results: [], handed: [] };
  const groups = await finishingGroups(executor, table, items);
  const parents = [...new Set(items.flatMap((i) => (i.parentId == null || i.transition.to === 'pending' ? [] : [i.parentId])))];
  if (groups.length === 0 && parents.length === 0) return { results: await finalizeStatement(executor, table, items), handed: [] };
  return inTransaction(
    executor,
    async (trx) => {
      // groups' rows before task rows, as every writer of both takes them (cancelTask, a retry
      // of dead rows, enqueue): a write that locked the parents first waited for a group whose
      // row a cancel of the parent's tree held, while the cancel waited for the parent
      const locked = groups.length > 0 ? await leaseLockFinishingGroups(trx, table, groups) : undefined;
      if (parents.length > 0) await lockParents(trx, table, parents, items);
      const results = await finalizeStatement(trx, table, items);
      if (groups.length === 0) return { results, handed: [] };
      const { promotedFrom, handed } = await leaseSettleGroupsHanding(trx, table, groups, handoff, { locked });
      return { results: results.map((r) => ({ ...r, unblockedFrom: promotedFrom })), handed };
    },
    "finishing an ordered row hands its group's head to the next row; an ending child may wake its parent",
  );
}

// in id order: the ending children's trigger locks each parent again (already held), so
// concurrent batches take the parents they share in one order. The batch's own rows below the
// highest parent are locked here too, in the same order: locked only by the write after the
// parents, a row below a parent (another workflow of this worker ending in the same batch) was
// taken after a higher id, and this worker's heartbeat, which locks its rows in id order, held it
// while waiting for that parent: a deadlock (fan-out.int.test.ts, once in CI). The rows above the
// highest parent follow in the write, still in id order.
async function lockParents(executor: Executor, table: LeasedTable<unknown>, parents: readonly string[], items: readonly FinalizeItem[]): Promise<void> {
  const highest = parents.reduce((a, b) => (compareIds(a, b) >= 0 ? a : b));
  const below = items.filter((i) => compareIds(String(i.id), highest) < 0).map((i) => String(i.id));
  await execute(
    executor,
    // a parent woken before may be pending: a claim meeting this lock passes over it (see wakeLockCte)
    sql`
      WITH ${wakeLockCte(table)}
      SELECT p.id, ${notifySleepers(table, sql`p.status IN ('pending', 'waiting')`)} AS woke
      FROM ${tableRef(table)} AS p CROSS JOIN wake
      WHERE p.id = ANY(${[...parents, ...below]}::bigint[]) ORDER BY p.id FOR NO KEY UPDATE OF p
    `,
  );
}

/**
 * Whether this write hands a group its next head: a grouped row going `done` (a row whose group is
 * unknown, `groupKey` left out, may be one). The worker counts such writes under way
 * (`TaskRunner.settling`): the next heads appear only as they commit.
 */
export function settlesGroup(item: Pick<FinalizeItem, 'transition' | 'groupKey'>): boolean {
  return item.transition.to === 'done' && item.groupKey !== null;
}

/** Groups whose head some item may finish (goes `done`); looks up rows whose group is unknown. */
async function finishingGroups(executor: Executor, table: LeasedTable<unknown>, items: readonly FinalizeItem[]): Promise<string[]> {
  const finishing = items.filter(settlesGroup);
  const groups = finishing.flatMap((i) => (typeof i.groupKey === 'string' ? [i.groupKey] : []));
  const unknown = finishing.filter((i) => i.groupKey === undefined).map((i) => i.id);
  if (unknown.length > 0) {
    for (const state of (await leaseReadState(executor, table, unknown)).values()) {
      if (state.groupKey !== null) groups.push(state.groupKey);
    }
  }
  return [...new Set(groups)];
}

/**
 * The fenced write itself, one statement. It sends the rows in id order, and so locks them in id
 * order whichever way the join is planned (driven by the input, or by the primary key's sorted
 * lookup): a heartbeat locks the same worker's rows in id order too, and writers that lock
 * several task rows in different orders can wait for each other in a cycle.
 */
async function finalizeStatement(
  executor: Executor,
  table: LeasedTable<unknown>,
  items: readonly FinalizeItem[],
): Promise<FinalizeResult[]> {
  const sorted = [...items].sort((a, b) => compareIds(a.id, b.id));
  if (items.every((i) => i.transition.to === 'done')) return finalizeDone(executor, table, items, sorted);
  const ids: string[] = [];
  const versions: number[] = [];
  const statuses: string[] = [];
  const delays: number[] = [];
  const errors: (string | null)[] = [];
  const refunds: number[] = [];
  const maxAges: (number | null)[] = [];
  const resultsJson: (string | null)[] = [];
  for (const { id, leaseVersion, transition: tr } of sorted) {
    ids.push(id);
    versions.push(leaseVersion);
    statuses.push(tr.to);
    delays.push(tr.to === 'pending' ? tr.delayMs : 0);
    // PostgreSQL text cannot hold NUL; an error message that does must still be recorded
    errors.push(tr.to === 'done' || tr.error === null ? null : tr.error.replaceAll('\u0000', '\uFFFD'));
    refunds.push(tr.to === 'pending' && tr.refund ? 1 : 0);
    maxAges.push(tr.to === 'pending' ? tr.maxAgeMs : null);
    resultsJson.push(tr.to === 'done' ? tr.resultJson : null);
  }
  // only core's task table has the column, and only its handlers return results
  const withResults = resultsJson.some((r) => r !== null);
  const wakes = items.some((i) => i.limited === true);
  const values = {
    ids: bigintArray(ids),
    versions: bigintArray(versions),
    statuses,
    delays,
    errors,
    refunds,
    maxAges,
    results: resultsJson,
  };
  const rows = await executeCached<{ id: string; version: string; status: TaskStatus }, typeof values>(
    executor,
    `leaseFinalize:${table.schema}.${table.table}:${withResults ? 'results' : ''}:${wakes ? 'wakes' : ''}`,
    (v) => generalStatement(table, withResults, wakes, v),
    values,
    // planned per call: its best plan depends on how many rows the arrays hold
    { prepare: false },
  );
  return results(items, rows);
}

interface GeneralValues extends Record<string, unknown> {
  readonly ids: unknown;
  readonly versions: unknown;
  readonly statuses: readonly string[];
  readonly delays: readonly number[];
  readonly errors: readonly (string | null)[];
  readonly refunds: readonly number[];
  readonly maxAges: readonly (number | null)[];
  readonly results: readonly (string | null)[];
}

// Interpolates `v` only (see executeCached): the text depends on the table, `withResults` and `wakes`
// (rows under limits: the slot-freed wake-up done once, see FinalizeItem.limited).
function generalStatement(table: LeasedTable<unknown>, withResults: boolean, wakes: boolean, v: GeneralValues): RawBuilder<{ id: string; version: string; status: TaskStatus }> {
  const setResult = withResults ? sql`, result = CASE WHEN f.status = 'done' THEN f.result ELSE t.result END` : sql``;
  const t = tableRef(table);
  return sql`
      WITH u AS (
        SELECT * FROM unnest(${v.ids}::bigint[], ${v.versions}::bigint[], ${v.statuses}::text[],
                             ${v.delays}::float8[], ${v.errors}::text[], ${v.refunds}::int[], ${v.maxAges}::float8[],
                             ${v.results}::jsonb[])
                      AS u(id, version, status, delay_ms, error, refund, max_age_ms, result)
      ), f AS (
        SELECT u.*,
               -- a deferral that would make the row older than its bound goes dead instead; the
               -- row's age is looked up by primary key, and only for such a deferral
               (u.status = 'pending' AND u.max_age_ms IS NOT NULL AND
                now() + u.delay_ms * interval '1 millisecond'
                  > (SELECT c.created_at FROM ${t} AS c WHERE c.id = u.id) + u.max_age_ms * interval '1 millisecond') AS too_old
        FROM u
      )${wakes ? sql`, ${wakeOnceCtes(table)}` : sql``}
      UPDATE ${t} AS t
      SET status = CASE WHEN f.too_old THEN 'dead' ELSE f.status END,
          available_at = CASE WHEN f.status = 'pending' AND NOT f.too_old
                              THEN now() + f.delay_ms * interval '1 millisecond'
                              ELSE t.available_at END,
          -- back to pending through the scheduled rows (task_due), even when due now: only
          -- INSERTs may add to the claim's main index below a worker's ready floor (ReadyFloor)
          scheduled = f.status = 'pending' AND NOT f.too_old,
          attempts = t.attempts - f.refund,
          last_error = CASE WHEN f.too_old
                            THEN ${DEFER_AGE_ERROR_PREFIX} || ': ' || f.error
                            ELSE f.error END,
          done_at = CASE WHEN f.status = 'done' THEN now() ELSE t.done_at END,
          lease_owner = NULL,
          lease_until = NULL${setResult}
      FROM f
      WHERE ${fenceEach('t', 'f')}${wakes ? sql` AND ${WAKE_ONCE_FIRST}` : sql``}
      RETURNING t.id, f.version, t.status
    `;
}

/**
 * The same fenced write when every item goes `done` (the common case under load): two arrays
 * instead of seven and no join for the defer-age bound, so less to send, plan and run. It
 * returns only the refused items (none, normally), not a row per task for the worker to parse.
 */
async function finalizeDone(
  executor: Executor,
  table: LeasedTable<unknown>,
  items: readonly FinalizeItem[],
  sorted: readonly FinalizeItem[],
): Promise<FinalizeResult[]> {
  const withResults = sorted.some((i) => i.transition.to === 'done' && i.transition.resultJson !== null);
  const wakes = items.some((i) => i.limited === true);
  // a few rows, as a worker writes them at low load: statements that plan in less time
  if (!wakes && sorted.length <= FEW_ROWS) return finalizeFewDone(executor, table, items, sorted, withResults);
  const values = {
    ids: bigintArray(sorted.map((i) => i.id)),
    versions: bigintArray(sorted.map((i) => i.leaseVersion)),
    results: withResults ? sorted.map(resultJsonOf) : [],
  };
  const refused = await executeCached<{ id: string; version: string }, typeof values>(
    executor,
    `leaseFinalizeDone:${table.schema}.${table.table}:${withResults ? 'results' : ''}:${wakes ? 'wakes' : ''}`,
    (v) => doneStatement(table, withResults, wakes, v),
    values,
    { prepare: false },
  );
  if (refused.length === 0) return items.map(({ id }) => ({ id, won: true, status: 'done' }));
  const lost = new Set(refused.map((r) => tokenKey({ id: r.id, leaseVersion: r.version })));
  return items.map((item) => (lost.has(tokenKey(item)) ? { id: item.id, won: false, status: null } : { id: item.id, won: true, status: 'done' }));
}

// Interpolates `v` only (see executeCached): the text depends on the table, `withResults` and `wakes`.
function doneStatement(
  table: LeasedTable<unknown>,
  withResults: boolean,
  wakes: boolean,
  v: { readonly ids: unknown; readonly versions: unknown; readonly results: readonly (string | null)[] },
): RawBuilder<{ id: string; version: string }> {
  return sql`
      WITH f AS (
        SELECT * FROM unnest(${v.ids}::bigint[], ${v.versions}::bigint[]${withResults ? sql`, ${v.results}::jsonb[]` : sql``})
                      AS f(id, version${withResults ? sql`, result` : sql``})
      )${wakes ? sql`, ${wakeOnceCtes(table)}` : sql``}, written AS (
        UPDATE ${tableRef(table)} AS t
        SET ${doneSet(withResults ? sql`f.result` : undefined)}
        FROM f
        WHERE ${fenceEach('t', 'f')}${wakes ? sql` AND ${WAKE_ONCE_FIRST}` : sql``}
        RETURNING t.id, f.version
      )
      SELECT f.id, f.version FROM f
      WHERE NOT EXISTS (SELECT 1 FROM written AS w WHERE w.id = f.id AND w.version = f.version)
    `;
}

function results(items: readonly FinalizeItem[], rows: readonly { id: string; version: string; status: TaskStatus }[]): FinalizeResult[] {
  // keyed by id and token: one batch may carry a stale and a current token for the same id
  const won = new Map(rows.map((r) => [tokenKey({ id: r.id, leaseVersion: r.version }), r.status]));
  return items.map(({ id, leaseVersion }) => {
    const status = won.get(tokenKey({ id, leaseVersion }));
    return { id, won: status !== undefined, status: status ?? null };
  });
}
