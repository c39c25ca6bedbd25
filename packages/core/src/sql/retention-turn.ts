import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';

/**
 * Takes the table's retention turn for `owner` when it is free (its `next_at` has passed, or no
 * turn was ever taken) and moves the next one `everyMs` on; returns whether this call took it.
 * One statement, committed on its own: no session state and no lock outlives it, so it works
 * through a pooler, and a worker that dies during its turn blocks nobody past `next_at`.
 * Concurrent callers wait only for each other's single-row upsert.
 * @internal
 */
export async function retentionTakeTurn(executor: Executor, table: LeasedTable<unknown>, owner: string, everyMs: number): Promise<boolean> {
  const rows = await execute<{ taken: number }>(
    executor,
    sql`
      INSERT INTO ${sql.id(table.schema, 'retention')} AS r (table_name, next_at, taken_by, taken_at)
      VALUES (${table.table}, now() + ${everyMs} * interval '1 millisecond', ${owner}, now())
      ON CONFLICT (table_name) DO UPDATE
        SET next_at = excluded.next_at, taken_by = excluded.taken_by, taken_at = excluded.taken_at
        WHERE r.next_at <= now()
      RETURNING 1 AS taken
    `,
  );
  return rows.length > 0;
}
