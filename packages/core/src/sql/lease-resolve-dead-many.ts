import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { TaskStatus } from '../task-status.js';
import { execute, type Executor } from './execute.js';
import { byPrimaryKey } from './fence.js';
import { leaseLockGroupsOfRows } from './lease-lock-groups.js';
import { leaseSettleGroups } from './lease-settle-groups.js';
import { tableRef } from './table-ref.js';
import { inTransaction } from './transaction.js';
import { notifySleepers, wakeLockCte } from './wake-sleepers.js';

/** What a retry or skip of dead rows did with each id it was given. */
export interface DeadResolution {
  /** Ids that were dead and were changed, ascending. */
  readonly changed: string[];
  /**
   * Ids that were left alone, ascending: `status` null means no such row; otherwise the row was
   * not dead (its status as read by the statement).
   */
  readonly rejected: ReadonlyArray<{ readonly id: string; readonly status: TaskStatus | null }>;
}

/**
 * Sends dead rows back to `pending`, due now, with `attempts` reset to 0, `resolution =
 * 'retried: <reason>'` and `resolved_at = now()`: a person fixed the cause. `last_error` keeps
 * the error that killed the row until the next attempt overwrites it; `lease_version` is left
 * alone (the fencing token never goes back). On an ordered group the row becomes its head again.
 *
 * Only rows still `dead` change (guarded in the WHERE, so two people resolving the same id change
 * it once); every other id comes back in `rejected`, never silently dropped. Locks the changed
 * rows until the transaction ends. On core's task table, a retried row whose dedup key is live
 * again violates `task_dedup` (SQLSTATE 23505) and nothing changes. Ids must be positive
 * integers (as strings); the table needs the `resolution` and `resolved_at` columns.
 *
 * @example
 * const { changed, rejected } = await leaseRetryDeadMany(pool, taskTable(), ['12', '13'], 'SMTP fixed');
 */
export async function leaseRetryDeadMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  ids: readonly string[],
  reason: string,
): Promise<DeadResolution> {
  // a dead row of a group is its head (only heads are ever claimed), so it stays the head; due
  // now as a scheduled row, since only INSERTs may add to the claim index below a worker's
  // ready floor (see ReadyFloor)
  return resolveDeadMany(executor, table, ids, sql`
    status = 'pending', attempts = 0, available_at = now(), scheduled = true,
    resolution = ${resolution('retried', reason)}, resolved_at = now()`);
}

/**
 * Gives up on dead rows on purpose: they become `done` without running, with `resolution =
 * 'skipped: <reason>'` and `resolved_at = now()`; the next row of an ordered group becomes its
 * head in the same transaction (under the group's lock, see `leaseLockGroups`). `last_error`
 * keeps why the row died. Only rows still `dead` change; the others come back in `rejected`.
 * Locks the changed rows and their groups until the transaction ends (the caller's when
 * `executor` is one). Ids must be positive integers (as strings); the table needs the
 * `resolution` and `resolved_at` columns.
 *
 * @example
 * await leaseSkipDeadMany(pool, outbox.table, ['7'], 'replayed by hand');
 */
export async function leaseSkipDeadMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  ids: readonly string[],
  reason: string,
): Promise<DeadResolution> {
  if (ids.length === 0) return { changed: [], rejected: [] };
  return inTransaction(
    executor,
    async (trx) => {
      const groups = await leaseLockGroupsOfRows(trx, table, ids);
      const resolved = await resolveDeadMany(trx, table, ids, sql`
        status = 'done', done_at = now(), resolution = ${resolution('skipped', reason)}, resolved_at = now()`);
      await leaseSettleGroups(trx, table, groups);
      return resolved;
    },
    "skipping an ordered group's dead head hands the head to the next row",
  );
}

// PostgreSQL text cannot hold NUL; a reason that does must still be recorded
function resolution(verb: string, reason: string): string {
  return `${verb}: ${reason}`.replaceAll('\u0000', '\uFFFD');
}

// `set` is one of the two constant SET lists above, never built from input
async function resolveDeadMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  ids: readonly string[],
  set: RawBuilder<unknown>,
): Promise<DeadResolution> {
  if (ids.length === 0) return { changed: [], rejected: [] };
  const t = tableRef(table);
  const rows = await execute<{ id: string; changed: boolean; status: TaskStatus | null }>(
    executor,
    // Each row by primary key (see byPrimaryKey), whatever the statistics
    // say: joined plainly, retrying 1,000 of 51,000 dead rows hashed every dead row and scanned
    // the whole table for the statuses, however many finished rows it keeps.
    sql`
      WITH ${wakeLockCte(table)}, wanted AS (SELECT DISTINCT unnest(${[...ids]}::bigint[]) AS id FROM wake),
      changed AS (
        UPDATE ${t} AS d SET ${set}
        FROM wanted
        WHERE ${byPrimaryKey('d', 'wanted', 'dead')} AND d.id = wanted.id
        RETURNING d.id, d.status
      )
      -- read from the statement's snapshot: for unchanged ids, the status that refused them.
      -- A retried row is claimable once this commits: a sleeping worker is told (see wakeLockCte)
      SELECT w.id, (c.id IS NOT NULL) AS changed, (SELECT cur.status FROM ${t} AS cur WHERE cur.id = w.id) AS status,
             ${notifySleepers(table, sql`c.status = 'pending'`)} AS woke
      FROM wanted AS w LEFT JOIN changed AS c ON c.id = w.id
      ORDER BY w.id
    `,
    // planned per call, for its ids: prepared, a connection that ran it five times (a chunked
    // retry of many dead rows in one transaction) switched to the generic plan, which guesses 10
    // ids and joined 10,000 by nested loop, 14 s a chunk instead of 0.2 s
    { prepare: false },
  );
  const changed: string[] = [];
  const rejected: { id: string; status: TaskStatus | null }[] = [];
  for (const r of rows) {
    if (r.changed) changed.push(String(r.id));
    else rejected.push({ id: String(r.id), status: r.status ?? null });
  }
  return { changed, rejected };
}
