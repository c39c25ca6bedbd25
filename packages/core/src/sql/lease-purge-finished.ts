import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/** The statuses a row ends in, which retention and `leasehold purge` delete by age. */
export type FinishedStatus = 'done' | 'cancelled' | 'dead';

/**
 * How long a row someone waits for (`waitForResult` marked it `result_wanted`) stays after it
 * ended, whatever the retention age: a waiter woken by the end reads the row next, and after a
 * lost LISTEN connection it reads it again once reconnected. An hour covers any reconnect short
 * of an outage a person would notice; with the default age of days it changes nothing.
 */
export const RESULT_HOLD_MS = 3_600_000;

/**
 * Deletes at most `limit` rows of `status` that ended more than `olderThanMs` ago (database
 * clock), oldest first, and returns how many it deleted. Their workflow steps and signals go
 * with them (core migration 8's delete trigger). Kept whatever their age:
 * - a child (`parent_id`) whose parent has not ended as done or cancelled: its parent's
 *   `waitForChildren` reads the children's results, and a dead parent may be retried;
 * - a row someone waits for (`result_wanted`) ended less than {@link RESULT_HOLD_MS} ago;
 * - a dead row of an ordering group: it blocks its group until a person retries or skips it.
 *
 * The age of a done or cancelled row counts from `done_at`. A dead row records no end time: its
 * age counts from when its last attempt became due (`available_at`), so it may leave up to one
 * attempt's run (its lease, at most) early.
 *
 * Each call is one short statement: it locks at most `limit` rows, `FOR UPDATE SKIP LOCKED`,
 * so it never waits for a row anyone holds, and touches no row a claim can take. It walks the
 * status' own partial index from its oldest entry (`<table>_done_at`, `task_cancelled_at`,
 * `<table>_dead`), so a batch reads about `limit` entries plus the rows kept above. The limit is
 * a subquery and the ids an array, for the plan's sake (see {@link leasePurgeDone}).
 * Cancelled rows exist only where tasks can be cancelled (core's task table): on other tables
 * the call deletes nothing without reading anything.
 * @internal
 */
export async function leasePurgeFinished(
  executor: Executor,
  table: LeasedTable<unknown>,
  status: FinishedStatus,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  if (status === 'cancelled' && table.waits !== true) return 0;
  const t = tableRef(table);
  const cutoff = sql`now() - ${olderThanMs} * interval '1 millisecond'`;
  const age = status === 'dead' ? sql.ref('c.available_at') : sql.ref('c.done_at');
  const [row] = await execute<{ deleted: string }>(
    executor,
    sql`
      WITH deleted AS (
        DELETE FROM ${t}
        WHERE id = ANY(ARRAY(
          SELECT c.id FROM ${t} AS c
          WHERE c.status = ${status} AND ${age} < ${cutoff}${kept(table, status, age)}
          ORDER BY ${status === 'dead' ? sql.ref('c.id') : age}
          LIMIT (SELECT ${limit}::bigint)
          FOR UPDATE OF c SKIP LOCKED))
        RETURNING 1
      )
      SELECT count(*) AS deleted FROM deleted
    `,
    // the statement's text differs per table and status only; its plan must not go generic
    // with statistics of an empty table (see leasePurgeDone)
    { prepare: false },
  );
  return Number(row?.deleted ?? 0);
}

/** The conditions that keep a row past its age (see {@link leasePurgeFinished}). */
function kept(table: LeasedTable<unknown>, status: FinishedStatus, age: RawBuilder<unknown>): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [];
  if (status === 'dead') parts.push(sql`c.group_key IS NULL`);
  if (table.waits === true) {
    // core's task table: workflows' children and awaited results
    parts.push(sql`(NOT c.result_wanted OR ${age} < now() - ${RESULT_HOLD_MS} * interval '1 millisecond')`);
    parts.push(sql`(c.parent_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${tableRef(table)} AS p WHERE p.id = c.parent_id AND p.status NOT IN ('done', 'cancelled')))`);
  }
  return parts.length === 0 ? sql`` : sql` AND ${sql.join(parts, sql` AND `)}`;
}
