import type { Executor } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/**
 * Retention, one batch: deletes at most `limit` inbox rows received more than `olderThanMs` ago
 * (database time), oldest first, and returns how many. Call it in a loop, each call its own short
 * statement, until it returns less than `limit`. `schema` must be validated by the caller.
 *
 * Reads what it deletes, whatever the statistics say: the batch is taken in `received_at` order
 * with a LIMIT, which only the `inbox_received_at_idx` index answers without a sort, and the
 * rows are then reached by primary key (`= ANY(ARRAY(…))`, which the planner cannot turn into a
 * join). A single unbounded DELETE on a comparison the planner guessed wrong (statistics taken
 * while a backlog since pruned was still there) scanned every row the table retains to prune a
 * few, and a catch-up after a long pause deleted everything due in one statement.
 *
 * Locks: at most `limit` rows, `FOR UPDATE SKIP LOCKED`, so two prunes never wait for each other.
 */
export async function inboxPrune(executor: Executor, schema: string, olderThanMs: number, limit: number): Promise<number> {
  const inbox = sql.id(schema, 'inbox');
  const rows = await execute<{ n: string }>(
    executor,
    sql`WITH gone AS (
          DELETE FROM ${inbox}
          WHERE message_id = ANY(ARRAY(
            SELECT message_id FROM ${inbox}
            WHERE received_at < now() - ${olderThanMs} * interval '1 millisecond'
            ORDER BY received_at
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED))
          RETURNING 1)
        SELECT count(*) AS n FROM gone`,
  );
  return Number(rows[0]?.n ?? 0);
}
