import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { tableRef } from './table-ref.js';

/**
 * One row by id with every column as stored (the task page shows all of them), plus the server's
 * `now()` as `db_now`, so ages and lease deadlines are computed on the database's clock. `id`
 * must be a checked row id. Null when there is no such row. Takes no locks; one primary-key probe.
 */
export async function leasedRowGet(executor: Executor, table: LeasedTable<unknown>, id: string): Promise<Record<string, unknown> | null> {
  const [row] = await execute<Record<string, unknown>>(
    executor,
    sql`SELECT *, now() AS db_now FROM ${tableRef(table)} WHERE id = ${id}::bigint`,
  );
  return row ?? null;
}
