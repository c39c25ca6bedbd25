import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { tableRef } from './table-ref.js';

/**
 * The first id whose row was created at or after `at`, or the highest id + 1 when none was: where
 * a time bound of the list falls. Ids grow with `created_at` (both are drawn as a row is
 * inserted), so this is a binary search over the primary key, about 20 index probes for a million
 * rows, instead of a scan of every newer row. A row whose inserting transaction ran across `at`
 * can land on the other side of it (its `created_at` is its transaction's start). Takes no locks.
 *
 * @example
 * const fromId = await leasedIdAt(pool, taskTable(), new Date(Date.now() - 3_600_000));
 */
export async function leasedIdAt(executor: Executor, table: LeasedTable<unknown>, at: Date): Promise<string> {
  const t = tableRef(table);
  const [row] = await execute<{ id: string }>(
    executor,
    sql`
      -- invariant: every row with id < lo was created before at, every row with id >= hi at or after it
      WITH RECURSIVE search (lo, hi, step) AS (
        SELECT coalesce((SELECT min(id) FROM ${t}), 1), coalesce((SELECT max(id) FROM ${t}), 0) + 1, 0
        UNION ALL
        SELECT CASE WHEN m.id < s.hi AND m.created_at < ${at}::timestamptz THEN m.id + 1 ELSE s.lo END,
               CASE WHEN m.id IS NULL OR m.id >= s.hi THEN (s.lo + s.hi) / 2 -- no row in [mid, hi)
                    WHEN m.created_at < ${at}::timestamptz THEN s.hi
                    ELSE m.id END,
               s.step + 1
        FROM search AS s
        LEFT JOIN LATERAL (
          -- the first row at or after the midpoint: one probe of the primary key
          SELECT r.id, r.created_at FROM ${t} AS r WHERE r.id >= (s.lo + s.hi) / 2 ORDER BY r.id LIMIT 1
        ) AS m ON true
        WHERE s.lo < s.hi AND s.step < 128
      )
      SELECT hi::text AS id FROM search ORDER BY step DESC LIMIT 1
    `,
  );
  return row!.id;
}
