import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { toListRow, type ListRow } from './leased-list-page.js';
import { tableRef } from './table-ref.js';

/**
 * The rows with these ids, by id (ids that do not exist are left out): what a confirmation page
 * lists before a retry or skip. `ids` must be checked row ids. Takes no locks; primary-key probes.
 */
export async function leasedRowsById(executor: Executor, table: LeasedTable<unknown>, ids: readonly string[]): Promise<ListRow[]> {
  if (ids.length === 0) return [];
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT id, ${sql.ref(table.nameColumn)} AS name, status, attempts, max_attempts, group_key, blocked,
             created_at, available_at, lease_owner, lease_until, left(last_error, 300) AS last_error
      FROM ${tableRef(table)}
      WHERE id = ANY(${[...ids]}::bigint[])
      ORDER BY id
    `,
  );
  return rows.map(toListRow);
}
