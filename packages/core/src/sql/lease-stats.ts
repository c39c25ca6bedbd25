import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { TaskStatus } from '../task-status.js';
import { execute, type Executor } from './execute.js';
import { finishedCount, sampledFinished } from './finished-sample.js';
import { indexesOnly, withoutJit } from './without-jit.js';
import { liveRows } from './lease-live-stats.js';
import { tableRef } from './table-ref.js';
import { ageMs, waitingSince } from './waiting-since.js';

/** The design article's monitoring queries (its section 6) for one leased table, read in one snapshot. */
export interface LeaseStats {
  /**
   * Rows per status (the queue depth): pending, processing, done and dead always (0 when none);
   * the workflow statuses, waiting and cancelled (core's task table only), when any row has them.
   */
  readonly counts: Readonly<Record<'pending' | 'processing' | 'done' | 'dead', number> & Partial<Record<TaskStatus, number>>>;
  /**
   * How long the longest-waiting unfinished row has waited, in ms by the database's clock: from
   * when it became due if it never ran, else from its creation; a row scheduled for later is not
   * waiting yet. Null when none waits. It grows without bound when nothing consumes the table
   * (for the outbox, the design article's `now() - min(created_at)`). The CLI shows the same.
   */
  readonly oldestPendingAgeMs: number | null;
  /** Processing rows whose lease has run out (a sign of crashed workers). */
  readonly expiredLeases: number;
  /** Unfinished (pending or processing) rows by attempts so far, ascending (a sign of retries piling up). */
  readonly attempts: ReadonlyArray<{ readonly attempts: number; readonly count: number }>;
  /**
   * `counts.done` and `counts.cancelled` are estimates from a sample of the table's pages (the
   * table is too large to count every finished row cheaply). Every other figure is exact.
   */
  readonly estimated: boolean;
}

/**
 * Reads {@link LeaseStats} with one statement, so all numbers come from the same snapshot (one
 * more reads the table's size first; with a pool both run in a transaction of their own, JIT
 * off). Takes no locks. Costs what it returns, not what the table
 * holds: a small table (up to 2.4 MB) is read whole and every count is exact; in a larger one the
 * unfinished and dead rows are read from their partial indexes (exact), and the done and
 * cancelled rows are estimated from a sample of about 150 pages (`estimated`).
 *
 * @example
 * const { counts, oldestPendingAgeMs } = await leaseStats(pool, taskTable());
 */
export function leaseStats(executor: Executor, table: LeasedTable<unknown>): Promise<LeaseStats> {
  // JIT off: its compile time, triggered by estimates the partial indexes' stale statistics
  // inflate, was most of the statement's (0.3–0.7 s beside 10,000,000 rows; see withoutJit)
  return withoutJit(executor, (on, own) => read(on, own, table));
}

async function read(executor: Executor, own: boolean, table: LeasedTable<unknown>): Promise<LeaseStats> {
  const t = tableRef(table);
  const count = await finishedCount(executor, table);
  if (!count.exact) await indexesOnly(executor, own);
  // a large table: the unfinished rows from their indexes, the finished ones from a sample
  const source = count.exact ? t : sql`(${liveRows(table, true)}) AS live`;
  const finished = count.exact ? sql`` : sql`UNION ALL SELECT status, sum(n) AS n FROM (${sampledFinished(table, count.pages)}) AS f GROUP BY status`;
  const [row] = await execute<{
    counts: Record<string, string> | null; oldest_ms: string | null; expired: string;
    attempts: Array<{ attempts: number; count: number }> | null;
  }>(
    executor,
    // one scan of the table, grouped by status and attempts (a few dozen groups), which the
    // figures are then taken from: as four subqueries it scanned the table three times
    sql`
      WITH per AS MATERIALIZED (
        SELECT status, attempts, count(*) AS n, ${waitingSince()} AS since,
               count(*) FILTER (WHERE status = 'processing' AND lease_until < now()) AS expired
        FROM ${source}
        GROUP BY status, attempts
      )
      SELECT
        (SELECT jsonb_object_agg(status, n) FROM (SELECT status, sum(n) AS n FROM per GROUP BY status ${finished}) AS s) AS counts,
        (SELECT ${ageMs(sql`min(since)`)} FROM per) AS oldest_ms,
        (SELECT coalesce(sum(expired), 0) FROM per) AS expired,
        (SELECT jsonb_agg(jsonb_build_object('attempts', attempts, 'count', n) ORDER BY attempts)
           FROM (SELECT attempts, sum(n) AS n FROM per WHERE status IN ('pending', 'processing') GROUP BY attempts) AS a) AS attempts
    `,
  );
  const counts: Record<'pending' | 'processing' | 'done' | 'dead', number> & Partial<Record<TaskStatus, number>> = { pending: 0, processing: 0, done: 0, dead: 0 };
  for (const [status, n] of Object.entries(row?.counts ?? {})) counts[status as TaskStatus] = Number(n);
  return {
    counts,
    oldestPendingAgeMs: row?.oldest_ms == null ? null : Math.max(0, Number(row.oldest_ms)),
    expiredLeases: Number(row?.expired ?? 0),
    attempts: (row?.attempts ?? []).map((a) => ({ attempts: Number(a.attempts), count: Number(a.count) })),
    estimated: !count.exact,
  };
}
