import { execute, type Executor, type LeasedTable } from '@leasehold/core';
import { sql } from 'kysely';

/** What `leasehold stats` shows for one queue (a task name, or an outbox event type). */
export interface QueueStats {
  /** Task name (`task` table) or event type (`outbox` table). */
  readonly name: string;
  readonly pending: number;
  readonly processing: number;
  readonly done: number;
  readonly dead: number;
  /**
   * How long the longest-waiting unfinished row has been due, in ms by the database's clock:
   * counted from its scheduled time if it never ran, else from its creation. Rows scheduled
   * for later and never tried are not waiting yet. Null when nothing waits.
   */
  readonly oldestPendingAgeMs: number | null;
  /** `processing` rows whose lease ran out: their worker crashed or stalled; reclaim will pick them up. */
  readonly expiredLeases: number;
}

/**
 * Counts the rows of a leased table per name in one statement (one snapshot), for core's
 * `task` table and the outbox alike. Takes no locks; scans the whole table, finished rows too,
 * so purge `done` rows to keep it cheap.
 */
export async function queueStats(executor: Executor, table: LeasedTable<unknown>): Promise<QueueStats[]> {
  const rows = await execute<{
    name: string; pending: string; processing: string; done: string; dead: string; expired: string; oldest_ms: string | null;
  }>(
    executor,
    sql`
      SELECT ${sql.id(table.nameColumn)} AS name,
             count(*) FILTER (WHERE status = 'pending') AS pending,
             count(*) FILTER (WHERE status = 'processing') AS processing,
             count(*) FILTER (WHERE status = 'done') AS done,
             count(*) FILTER (WHERE status = 'dead') AS dead,
             count(*) FILTER (WHERE status = 'processing' AND lease_until < now()) AS expired,
             extract(epoch FROM now() - min(
               -- never ran: waiting since it was due; ran before (retry, crash): since it was created
               CASE WHEN attempts = 0 THEN available_at ELSE created_at END
             ) FILTER (
               -- unfinished and due, or failed before and now in backoff; scheduled-for-later rows are not late
               WHERE status = 'processing' OR (status = 'pending' AND (attempts > 0 OR available_at <= now()))
             )) * 1000 AS oldest_ms
      FROM ${sql.id(table.schema, table.table)}
      GROUP BY 1
      ORDER BY 1
    `,
  );
  return rows.map((r) => ({
    name: r.name,
    pending: Number(r.pending),
    processing: Number(r.processing),
    done: Number(r.done),
    dead: Number(r.dead),
    oldestPendingAgeMs: r.oldest_ms === null ? null : Math.max(0, Math.round(Number(r.oldest_ms))),
    expiredLeases: Number(r.expired),
  }));
}
