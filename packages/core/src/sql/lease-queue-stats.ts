import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { finishedCount, sampledFinished } from './finished-sample.js';
import { indexesOnly, withoutJit } from './without-jit.js';
import { liveRows } from './lease-live-stats.js';
import { tableRef } from './table-ref.js';
import { oldestWaitingAgeMs } from './waiting-since.js';

/** The figures of one queue: a task name (core's `task` table) or an event type (the outbox). */
export interface QueueStats {
  /** Task name, or event type. */
  readonly name: string;
  /** Not yet finished nor running, blocked ones included. */
  readonly pending: number;
  /** Of `pending`: waiting behind an earlier unfinished row of their ordering group. */
  readonly blocked: number;
  readonly processing: number;
  /** Finished: an estimate when {@link QueueStats.estimated} says so. */
  readonly done: number;
  readonly dead: number;
  /** How long the longest-waiting unfinished row has waited (see `docs/state-machine.md`); null when none waits. */
  readonly oldestPendingAgeMs: number | null;
  /** `processing` rows whose lease ran out: their worker crashed or stalled; a claim will take them over. */
  readonly expiredLeases: number;
  /**
   * `done` is an estimate, from a sample of the table's pages (its table is too large to count
   * every finished row cheaply; see `docs/operations.md`, "Retention"). Every other figure is exact.
   */
  readonly estimated: boolean;
}

/**
 * Counts the rows of a leased table per name in one statement (one snapshot): what `leasehold
 * stats` and the dashboard's overview show. Takes no locks. Costs what it returns, not what the
 * table holds: a small table (up to 2.4 MB) is read whole and every count is exact; in a larger
 * one, the unfinished and dead rows are counted exactly from their partial indexes, and the done
 * rows are estimated from a sample of about 150 pages (`estimated` says so). One extra
 * statement reads the table's size first; with a pool both run in a transaction of their own, JIT off.
 *
 * @example
 * for (const q of await leaseQueueStats(pool, taskTable())) console.log(q.name, q.pending, q.oldestPendingAgeMs);
 */
export function leaseQueueStats(executor: Executor, table: LeasedTable<unknown>): Promise<QueueStats[]> {
  // JIT off: its compile time, triggered by estimates the partial indexes' stale statistics
  // inflate, was most of the statement's (0.3–0.7 s beside 10,000,000 rows; see withoutJit)
  return withoutJit(executor, (on, own) => read(on, own, table));
}

async function read(executor: Executor, own: boolean, table: LeasedTable<unknown>): Promise<QueueStats[]> {
  const count = await finishedCount(executor, table);
  if (!count.exact) {
    await indexesOnly(executor, own);
    return sampledQueueStats(executor, table, count.pages);
  }
  const rows = await execute<{
    name: string; pending: string; blocked: string; processing: string; done: string; dead: string; expired: string; oldest_ms: string | null;
  }>(
    executor,
    sql`
      SELECT ${sql.ref(table.nameColumn)} AS name,
             count(*) FILTER (WHERE status = 'pending') AS pending,
             count(*) FILTER (WHERE status = 'pending' AND blocked) AS blocked,
             count(*) FILTER (WHERE status = 'processing') AS processing,
             count(*) FILTER (WHERE status = 'done') AS done,
             count(*) FILTER (WHERE status = 'dead') AS dead,
             count(*) FILTER (WHERE status = 'processing' AND lease_until < now()) AS expired,
             ${oldestWaitingAgeMs()} AS oldest_ms
      FROM ${tableRef(table)}
      GROUP BY 1
      ORDER BY 1
    `,
  );
  return rows.map((r) => ({
    name: r.name,
    pending: Number(r.pending),
    blocked: Number(r.blocked),
    processing: Number(r.processing),
    done: Number(r.done),
    dead: Number(r.dead),
    oldestPendingAgeMs: r.oldest_ms === null ? null : Math.max(0, Math.round(Number(r.oldest_ms))),
    expiredLeases: Number(r.expired),
    estimated: false,
  }));
}

/** {@link leaseQueueStats} of a large table: the live rows from their indexes, done rows sampled. */
async function sampledQueueStats(executor: Executor, table: LeasedTable<unknown>, pages: number): Promise<QueueStats[]> {
  const rows = await execute<{
    name: string; pending: string | null; blocked: string | null; processing: string | null; done: string | null;
    dead: string | null; expired: string | null; oldest_ms: string | null;
  }>(
    executor,
    sql`
      WITH live AS (
        SELECT name,
               count(*) FILTER (WHERE status = 'pending') AS pending,
               count(*) FILTER (WHERE status = 'pending' AND blocked) AS blocked,
               count(*) FILTER (WHERE status = 'processing') AS processing,
               count(*) FILTER (WHERE status = 'dead') AS dead,
               count(*) FILTER (WHERE status = 'processing' AND lease_until < now()) AS expired,
               ${oldestWaitingAgeMs()} AS oldest_ms
        FROM (${liveRows(table)}) AS live
        GROUP BY 1
      ), finished AS (
        SELECT name, n AS done FROM (${sampledFinished(table, pages)}) AS f WHERE status = 'done'
      )
      SELECT coalesce(l.name, f.name) AS name, l.pending, l.blocked, l.processing, f.done, l.dead, l.expired, l.oldest_ms
      FROM live AS l FULL JOIN finished AS f ON f.name = l.name
      ORDER BY 1
    `,
  );
  return rows.map((r) => ({
    name: r.name,
    pending: Number(r.pending ?? 0),
    blocked: Number(r.blocked ?? 0),
    processing: Number(r.processing ?? 0),
    done: Number(r.done ?? 0),
    dead: Number(r.dead ?? 0),
    oldestPendingAgeMs: r.oldest_ms === null ? null : Math.max(0, Math.round(Number(r.oldest_ms))),
    expiredLeases: Number(r.expired ?? 0),
    estimated: true,
  }));
}
