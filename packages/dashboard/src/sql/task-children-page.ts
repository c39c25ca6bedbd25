import type { Executor, LeasedTable, TaskStatus } from '@leasehold/core';
import { execute, statusIs } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { listColumns, toListRow, type ListPage, type ListRange } from './leased-list-page.js';
import { tableRef } from './table-ref.js';

/**
 * One page of a run's children, newest first, keyset on `id` (never OFFSET) along core migration
 * 8's `(parent_id, id)` index, so it costs the same on a table of a million rows: the list's
 * "children of #id" filter. Status and name narrow within the parent's children. `parentId` must
 * be a checked row id. Takes no locks.
 */
export async function taskChildrenPage(
  executor: Executor,
  table: LeasedTable<unknown>,
  parentId: string,
  filter: { readonly status: TaskStatus | null; readonly name: string | null },
  range: ListRange,
): Promise<ListPage> {
  const raw = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT ${listColumns(table)}
      FROM ${tableRef(table)}
      WHERE parent_id = ${parentId}::bigint AND id < ${range.below}::bigint AND id >= ${range.floor}::bigint
        ${filter.status === null ? sql`` : sql`AND ${statusIs(null, filter.status)}`}
        ${filter.name === null ? sql`` : sql`AND ${sql.ref(table.nameColumn)} = ${filter.name}`}
      ORDER BY parent_id DESC, id DESC
      LIMIT ${range.limit + 1}
    `,
  );
  const rows = raw.slice(0, range.limit).map(toListRow);
  return { rows, next: raw.length > range.limit ? rows.at(-1)!.id : null, scannedFrom: range.floor };
}
