import type { Executor } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/**
 * Deletes inbox rows received more than `olderThanMs` ago (database time); returns how many.
 * Takes row locks on the deleted rows only. `schema` must be validated by the caller.
 */
export async function inboxPrune(executor: Executor, schema: string, olderThanMs: number): Promise<number> {
  const rows = await execute<{ n: string }>(
    executor,
    sql`WITH gone AS (
          DELETE FROM ${sql.id(schema, 'inbox')}
          WHERE received_at < now() - ${olderThanMs} * interval '1 millisecond'
          RETURNING 1)
        SELECT count(*) AS n FROM gone`,
  );
  return Number(rows[0]?.n ?? 0);
}
