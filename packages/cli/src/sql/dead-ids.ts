import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** Ids of every dead row of a leased table, ascending, for `dead retry --all`. Uses the `*_dead` index; no locks. */
export async function deadIds(executor: Executor, table: LeasedTable<unknown>): Promise<string[]> {
  const rows = await execute<{ id: string }>(
    executor,
    sql`SELECT id FROM ${sql.id(table.schema, table.table)} WHERE status = 'dead' ORDER BY id`,
  );
  return rows.map((r) => String(r.id));
}
