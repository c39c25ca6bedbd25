import { execute, type Executor, type LeasedTable } from '@leasehold/core';
import { sql } from 'kysely';

/** A dead row of core's `task` table, for a person to look at. */
export interface DeadTask {
  readonly id: string;
  readonly name: string;
  readonly payload: unknown;
  readonly attempts: number;
  readonly maxAttempts: number;
  /** Why it died: the handler's error, "retries exhausted", the reap message, a validation error. */
  readonly lastError: string | null;
  /** Set when it belongs to an ordered group, whose later tasks it now blocks. */
  readonly groupKey: string | null;
  readonly createdAt: Date;
}

/** Lists dead tasks by id, `limit` at a time, after `afterId`. Uses the `task_dead` index; takes no locks. */
export async function taskDeadList(
  executor: Executor,
  table: LeasedTable<unknown>,
  page: { readonly limit: number; readonly afterId: string | null },
): Promise<DeadTask[]> {
  const rows = await execute<{
    id: string; name: string; payload: unknown; attempts: number; max_attempts: number;
    last_error: string | null; group_key: string | null; created_at: Date;
  }>(
    executor,
    sql`
      SELECT id, name, payload, attempts, max_attempts, last_error, group_key, created_at
      FROM ${sql.id(table.schema, table.table)}
      WHERE status = 'dead' AND id > ${page.afterId ?? '0'}::bigint
      ORDER BY id
      LIMIT ${page.limit}
    `,
  );
  return rows.map((r) => ({
    id: String(r.id),
    name: r.name,
    payload: r.payload,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    lastError: r.last_error,
    groupKey: r.group_key,
    createdAt: r.created_at,
  }));
}
