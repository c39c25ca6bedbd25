import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
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
  readonly done: number;
  readonly dead: number;
  /** How long the longest-waiting unfinished row has waited (see `docs/state-machine.md`); null when none waits. */
  readonly oldestPendingAgeMs: number | null;
  /** `processing` rows whose lease ran out: their worker crashed or stalled; a claim will take them over. */
  readonly expiredLeases: number;
}

/**
 * Counts the rows of a leased table per name in one statement (one snapshot): what `leasehold
 * stats` shows. Takes no locks; scans the whole table, finished rows too, so purge `done` rows
 * (`leasePurgeDone`) to keep it cheap.
 *
 * @example
 * for (const q of await leaseQueueStats(pool, taskTable())) console.log(q.name, q.pending, q.oldestPendingAgeMs);
 */
export async function leaseQueueStats(executor: Executor, table: LeasedTable<unknown>): Promise<QueueStats[]> {
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
  }));
}
