import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { toListRow, type ListRow } from './leased-list-page.js';
import { groupTableRef, tableRef } from './table-ref.js';

const COLUMNS = sql`id, status, attempts, max_attempts, group_key, blocked, created_at, available_at, lease_owner, lease_until, left(last_error, 300) AS last_error`;

/**
 * The unfinished rows of one ordering group (an outbox aggregate), in the order they will run:
 * its head (named by `<table>_group`), then up to `limit` rows waiting behind it, read in id order
 * from `<table>_blocked` (group_key, id). Finished rows are not included (no index finds them by
 * group; the list's group filter pages through them). Takes no locks.
 */
export async function leasedGroupRows(executor: Executor, table: LeasedTable<unknown>, groupKey: string, limit: number): Promise<ListRow[]> {
  const t = tableRef(table);
  const name = sql.ref(table.nameColumn);
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      (SELECT ${COLUMNS}, ${name} AS name FROM ${t}
       WHERE id = (SELECT head_id FROM ${groupTableRef(table)} WHERE group_key = ${groupKey}))
      UNION ALL
      (SELECT ${COLUMNS}, ${name} AS name FROM ${t}
       WHERE blocked AND group_key = ${groupKey}
       ORDER BY id LIMIT ${limit})
    `,
  );
  return rows.map(toListRow);
}
