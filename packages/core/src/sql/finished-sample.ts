import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/**
 * Up to this many pages (2.4 MB at 8 kB, some 20,000 short rows), the stats count every row: a
 * sequential read of about what a sample of a large table costs, and the counts are exact.
 */
export const EXACT_MAX_PAGES = 300;

/**
 * Beyond that, finished rows (done, cancelled) are counted in a sample of this many pages and
 * scaled up: the stats then read 150 pages (some 10,000 rows) whatever the table holds. Pages of
 * a large table are mostly outside shared buffers: beside 10,000,000 rows, 300 sampled pages took
 * 55–65 ms on a loaded two-core machine, most of the 100 ms the stats may take. Unfinished and
 * dead rows are still counted exactly, from their partial indexes.
 */
export const SAMPLE_PAGES = 150;

/** How the stats count the finished rows of a table: all of them, or a sample of its `pages`. */
export type FinishedCount = { readonly exact: true } | { readonly exact: false; readonly pages: number };

/**
 * Decides from the table's size on disk (one cheap statement: the file's length, no row read)
 * whether finished rows are counted or sampled.
 * @internal
 */
export async function finishedCount(executor: Executor, table: LeasedTable<unknown>): Promise<FinishedCount> {
  const [row] = await execute<{ pages: string }>(
    executor,
    sql`SELECT pg_relation_size(format('%I.%I', ${table.schema}::text, ${table.table}::text)::regclass)
               / current_setting('block_size')::bigint AS pages`,
  );
  const pages = Number(row?.pages ?? 0);
  return pages <= EXACT_MAX_PAGES ? { exact: true } : { exact: false, pages };
}

/**
 * `name, status, n`: the finished rows (done, cancelled) per name and status, estimated from
 * {@link SAMPLE_PAGES} of the table's `pages` and scaled to the whole table.
 *
 * Why strata, not `TABLESAMPLE SYSTEM`: SYSTEM takes each page with the same probability, so
 * the number of pages it reads varies by some 8 % (one over the square root of 150), and the
 * estimate with it: a fifth off in about one call in a hundred (CI caught one, 22 % low). Here
 * the table is cut into 150 equal runs of pages and one page is read at random in each: exactly
 * 150 pages, and a page's rows stand only for the run they were taken from, so a burst written
 * into a few pages is neither missed whole nor counted for the whole table. Each page is one TID
 * range scan (PostgreSQL 14+).
 * @internal
 */
export function sampledFinished(table: LeasedTable<unknown>, pages: number): RawBuilder<unknown> {
  const t = tableRef(table);
  // the page numbers are drawn first and kept (MATERIALIZED): inlined, random() was evaluated
  // per row of a join over the whole table
  return sql`
    WITH sampled AS MATERIALIZED (
      SELECT floor((run + random()) * ${pages}::float8 / ${SAMPLE_PAGES}::int)::bigint AS page
      FROM generate_series(0, ${SAMPLE_PAGES}::int - 1) AS run
    )
    SELECT r.name, r.status, round(count(*) * ${pages}::float8 / ${SAMPLE_PAGES}::int) AS n
    FROM sampled AS s
    CROSS JOIN LATERAL (
      SELECT ${sql.ref(table.nameColumn)} AS name, status FROM ${t}
      WHERE ctid >= format('(%s,0)', s.page)::tid AND ctid < format('(%s,0)', s.page + 1)::tid
        AND status IN ('done', 'cancelled')
      OFFSET 0
    ) AS r
    GROUP BY 1, 2`;
}
