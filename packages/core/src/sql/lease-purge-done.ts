import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/**
 * Retention: deletes at most `limit` `done` rows finished more than `olderThanMs` ago (by the
 * database's clock), oldest first, and returns how many it deleted. Unfinished and dead rows are
 * never touched.
 *
 * Locks: at most `limit` rows, `FOR UPDATE SKIP LOCKED`, so it never waits for a row another
 * purge (or anyone) holds and never holds more than one batch. Call it in a loop, each call its
 * own short statement, until it returns less than `limit`. Uses the `<table>_done_at` index.
 *
 * @example
 * while ((await leasePurgeDone(pool, taskTable(), 7 * 86_400_000, 1_000)) === 1_000);
 */
export async function leasePurgeDone(
  executor: Executor,
  table: LeasedTable<unknown>,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  const t = tableRef(table);
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
