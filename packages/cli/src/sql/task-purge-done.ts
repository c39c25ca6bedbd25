import { execute, type Executor, type LeasedTable } from '@leasehold/core';
import { sql } from 'kysely';

/**
 * Deletes at most `limit` `done` tasks finished more than `olderThanMs` ago, oldest first, and
 * returns how many. One bounded statement: it locks at most `limit` rows, skips rows another
 * purge holds, and never touches unfinished or dead ones. Call it until it returns less than
 * `limit`.
 */
export async function taskPurgeDone(executor: Executor, table: LeasedTable<unknown>, olderThanMs: number, limit: number): Promise<number> {
  const t = sql.id(table.schema, table.table);
  const [row] = await execute<{ deleted: string }>(
    executor,
    sql`
      WITH deleted AS (
        DELETE FROM ${t}
        WHERE id IN (
          SELECT id FROM ${t}
          WHERE status = 'done' AND done_at < now() - ${olderThanMs} * interval '1 millisecond'
          ORDER BY done_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        RETURNING 1
      )
      SELECT count(*) AS deleted FROM deleted
    `,
  );
  return Number(row?.deleted ?? 0);
}
