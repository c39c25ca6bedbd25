import { execute, type Executor, type LeasedTable, type TaskStatus } from '@leasehold/core';
import { sql } from 'kysely';
import { toDeadResolution, type DeadResolution } from './dead-resolution.js';

/**
 * Sends dead messages back to `pending`, due now, with `attempts` reset to 0 and
 * `resolution = 'retried: <reason>'`. Only rows still `dead` change (guarded in the WHERE, so a
 * concurrent resolve of the same id changes it once). `lease_version` is left alone: the fencing
 * token never goes back. `last_error` keeps the error that killed the message until the next
 * attempt overwrites it. Locks the changed rows until the statement's transaction ends.
 */
export async function outboxRetryDeadMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  ids: readonly string[],
  reason: string,
): Promise<DeadResolution> {
  const t = sql.id(table.schema, table.table);
  const rows = await execute<{ id: string; changed: boolean; status: TaskStatus | null }>(
    executor,
    sql`
      WITH wanted AS (SELECT DISTINCT unnest(${[...ids]}::bigint[]) AS id),
      changed AS (
        UPDATE ${t} AS o
        SET status = 'pending', attempts = 0, available_at = now(),
            resolution = ${`retried: ${reason}`}, resolved_at = now()
        FROM wanted WHERE o.id = wanted.id AND o.status = 'dead'
        RETURNING o.id
      )
      -- cur is read from the statement's snapshot: for unchanged ids, the status that refused them
      SELECT w.id, (c.id IS NOT NULL) AS changed, cur.status
      FROM wanted AS w LEFT JOIN changed AS c ON c.id = w.id LEFT JOIN ${t} AS cur ON cur.id = w.id
      ORDER BY w.id
    `,
  );
  return toDeadResolution(rows);
}
