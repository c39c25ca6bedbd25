import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';
import { withoutJit } from './without-jit.js';

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
 * Each call is one short statement (in a transaction of its own with a pool, see below): it
 * locks at most `limit` rows, `FOR UPDATE SKIP LOCKED`,
 * so it never waits for a row anyone holds, and touches no row a claim can take. It walks the
 * status' own partial index from its oldest entry (`<table>_done_at`, `task_cancelled_at`,
 * `<table>_dead`), so a batch reads about `limit` entries plus the rows kept above. For the plan's
 * sake:
 * - the ids are an array the planner cannot see into (see `byPrimaryKey` in `fence.ts`): as
 *   `id IN (…)` with current statistics, a batch of 1,000 beside 210,000 rows was hashed and
 *   joined to a scan of the whole table;
 * - the limit reaches the planner as a subquery, whose value it cannot see, so it plans for the
 *   first rows and takes the index's order. With statistics taken while the table was empty, a
 *   constant limit exceeded the few rows the planner expected, and a batch read all 150,000 done
 *   rows older than the cutoff, then sorted them, to delete 1,000 (test/core/purge-scale);
 * - but the planner then costs the batch at a tenth of the candidates (some 650,000 beside
 *   1,000,000 done rows), over the server's `jit_above_cost`: the batch spent 0.4–1 s compiling
 *   itself with JIT to delete 1,000 rows in 5 ms. Given a pool, each batch is therefore its own
 *   transaction with JIT off (see `withoutJit`); in a transaction or on a client the caller
 *   gives, it runs as it is;
 * - a parent is looked up by primary key, in a scalar subquery: as `NOT EXISTS` under an `OR`
 *   the planner may hash the whole table's unfinished rows on the first child it meets.
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
  const statement = sql<{ deleted: string }>`
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
    `;
  return withoutJit(executor, async (on) => Number((await execute(on, statement))[0]?.deleted ?? 0));
}

/** The conditions that keep a row past its age (see {@link leasePurgeFinished}). */
function kept(table: LeasedTable<unknown>, status: FinishedStatus, age: RawBuilder<unknown>): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [];
  if (status === 'dead') parts.push(sql`c.group_key IS NULL`);
  if (table.waits === true) {
    // core's task table: workflows' children and awaited results
    parts.push(sql`(NOT c.result_wanted OR ${age} < now() - ${RESULT_HOLD_MS} * interval '1 millisecond')`);
    parts.push(sql`(c.parent_id IS NULL OR NOT coalesce((
      SELECT p.status NOT IN ('done', 'cancelled') FROM ${tableRef(table)} AS p WHERE p.id = c.parent_id), false))`);
  }
  return parts.length === 0 ? sql`` : sql` AND ${sql.join(parts, sql` AND `)}`;
}
