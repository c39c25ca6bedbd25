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

/** The first children of each parent, and how many each has. */
export interface Grandchildren {
  readonly rows: readonly GrandchildRow[];
  /** Children per parent id, counted up to {@link COUNT_CAP} (the tree shows "and N more"). */
  readonly counts: ReadonlyMap<string, number>;
}

/** Children of one parent counted at most: a run with a huge fan-out costs no more than this. */
export const COUNT_CAP = 1_000;

/**
 * The first `perParent` children (by id) of each of `parentIds`, and each parent's child count up
 * to {@link COUNT_CAP}: the second level of a run's children tree. `parentIds` must be checked row
 * ids. Takes no locks; per parent, two bounded ranges of core migration 8's `(parent_id, id)` index.
 */
export async function taskGrandchildren(executor: Executor, table: LeasedTable<unknown>, parentIds: readonly string[], perParent: number): Promise<Grandchildren> {
  if (parentIds.length === 0) return { rows: [], counts: new Map() };
  const t = tableRef(table);
  const rows = await execute<{ parent_id: string; total: number; id: string | null; name: string | null; status: TaskStatus | null }>(
    executor,
    sql`
      SELECT p.id AS parent_id, n.total, c.id, c.name, c.status
      FROM unnest(${[...parentIds]}::bigint[]) AS p (id)
      CROSS JOIN LATERAL (SELECT count(*)::int AS total FROM (SELECT 1 FROM ${t} WHERE parent_id = p.id LIMIT ${COUNT_CAP}) AS x) AS n
      LEFT JOIN LATERAL (SELECT id, name, status FROM ${t} WHERE parent_id = p.id ORDER BY id LIMIT ${perParent}) AS c ON true
      ORDER BY p.id, c.id
    `,
  );
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(String(r.parent_id), r.total);
  return {
    rows: rows.filter((r) => r.id !== null).map((r) => ({ id: String(r.id), parentId: String(r.parent_id), name: r.name!, status: r.status! })),
    counts,
  };
}
