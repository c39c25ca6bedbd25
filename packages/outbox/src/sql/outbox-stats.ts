import { execute, type Executor, type LeasedTable, type TaskStatus } from '@leasehold/core';
import { sql } from 'kysely';

/** The design article's monitoring queries (section 6), read in one snapshot. */
export interface OutboxStats {
  /** Rows per status (the article's queue depth); every status is present, 0 when none. */
  readonly counts: Readonly<Record<TaskStatus, number>>;
  /**
   * Age in ms of the oldest message not yet delivered (pending or processing), by the
   * database's clock; null when there is none. The most important outbox metric: it grows
   * without bound when dispatch stops.
   */
  readonly oldestPendingAgeMs: number | null;
  /** Processing rows whose lease has run out (a sign of crashed dispatchers). */
  readonly expiredLeases: number;
  /** Undelivered (pending or processing) rows by attempts so far, ascending. */
  readonly attempts: ReadonlyArray<{ readonly attempts: number; readonly count: number }>;
}

/**
 * Reads {@link OutboxStats} with one statement, so all numbers come from the same snapshot.
 * Takes no locks. The status count scans every row (done rows included): keep `done` purged.
 */
export async function outboxStats(executor: Executor, table: LeasedTable<unknown>): Promise<OutboxStats> {
  const t = sql.id(table.schema, table.table);
  const [row] = await execute<{ counts: Record<string, string> | null; oldest_ms: string | null; expired: string; attempts: Array<{ attempts: number; count: number }> | null }>(
    executor,
    sql`
      SELECT
        (SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM ${t} GROUP BY status) AS s) AS counts,
        (SELECT extract(epoch FROM now() - min(created_at)) * 1000 FROM ${t}
          WHERE status IN ('pending', 'processing')) AS oldest_ms,
        (SELECT count(*) FROM ${t} WHERE status = 'processing' AND lease_until < now()) AS expired,
        (SELECT jsonb_agg(jsonb_build_object('attempts', attempts, 'count', n) ORDER BY attempts)
           FROM (SELECT attempts, count(*) AS n FROM ${t}
                 WHERE status IN ('pending', 'processing') GROUP BY attempts) AS a) AS attempts
    `,
  );
  const counts = { pending: 0, processing: 0, done: 0, dead: 0 };
  for (const [status, n] of Object.entries(row?.counts ?? {})) counts[status as TaskStatus] = Number(n);
  return {
    counts,
    oldestPendingAgeMs: row?.oldest_ms == null ? null : Number(row.oldest_ms),
    expiredLeases: Number(row?.expired ?? 0),
    attempts: (row?.attempts ?? []).map((a) => ({ attempts: Number(a.attempts), count: Number(a.count) })),
  };
}
