import { execute, type Executor, type LeasedTable } from '@leasehold/core';
import { sql } from 'kysely';

/** A dead message, for a person to look at (the article's dead-letter query). */
export interface DeadMessage {
  readonly id: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly attempts: number;
  /** Why it died: the publisher's error, "retries exhausted: …", or the reap message. */
  readonly lastError: string | null;
  /** Set when it belongs to an ordered aggregate, whose later messages it now blocks. */
  readonly groupKey: string | null;
  readonly createdAt: Date;
}

/**
 * Lists dead messages by id, `limit` at a time, starting after `afterId`. Uses the
 * `outbox_dead` index; takes no locks.
 */
export async function outboxDeadList(
  executor: Executor,
  table: LeasedTable<unknown>,
  page: { readonly limit: number; readonly afterId: string | null },
): Promise<DeadMessage[]> {
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT id, aggregate_type, aggregate_id, event_type, payload, headers, attempts, last_error, group_key, created_at
      FROM ${sql.id(table.schema, table.table)}
      WHERE status = 'dead' AND id > ${page.afterId ?? '0'}::bigint
      ORDER BY id
      LIMIT ${page.limit}
    `,
  );
  return rows.map((r) => ({
    id: String(r.id),
    aggregateType: r.aggregate_type as string,
    aggregateId: r.aggregate_id as string,
    eventType: r.event_type as string,
    payload: r.payload,
    headers: (r.headers as Record<string, string> | null) ?? {},
    attempts: Number(r.attempts),
    lastError: (r.last_error as string | null) ?? null,
    groupKey: (r.group_key as string | null) ?? null,
    createdAt: r.created_at as Date,
  }));
}
