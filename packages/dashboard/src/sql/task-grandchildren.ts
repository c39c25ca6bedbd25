import type { Executor, LeasedTable, TaskStatus } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { tableRef } from './table-ref.js';

/** A child of one of a run's children, for the run page's tree. */
export interface GrandchildRow {
  readonly id: string;
  readonly parentId: string;
  readonly name: string;
  readonly status: TaskStatus;
}

/** The first children of each parent, and how many each has in all. */
export interface Grandchildren {
  readonly rows: readonly GrandchildRow[];
  /** Children per parent id, all of them (the tree shows "and N more"). */
  readonly counts: ReadonlyMap<string, number>;
}

/**
 * The first `perParent` children (by id) of each of `parentIds`, and each parent's child count:
 * the second level of a run's children tree. `parentIds` must be checked row ids. Takes no locks;
 * reads core migration 8's `(parent_id, id)` index.
 */
export async function taskGrandchildren(executor: Executor, table: LeasedTable<unknown>, parentIds: readonly string[], perParent: number): Promise<Grandchildren> {
  if (parentIds.length === 0) return { rows: [], counts: new Map() };
  const rows = await execute<{ id: string; parent_id: string; name: string; status: TaskStatus; n: string; total: string }>(
    executor,
    sql`
      SELECT id, parent_id, name, status, n, total FROM (
        SELECT id, parent_id, name, status,
               row_number() OVER (PARTITION BY parent_id ORDER BY id) AS n,
               count(*) OVER (PARTITION BY parent_id) AS total
        FROM ${tableRef(table)} WHERE parent_id = ANY(${[...parentIds]}::bigint[])
      ) AS c
      WHERE n <= ${perParent} ORDER BY parent_id, id
    `,
  );
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(String(r.parent_id), Number(r.total));
  return {
    rows: rows.map((r) => ({ id: String(r.id), parentId: String(r.parent_id), name: r.name, status: r.status })),
    counts,
  };
}
