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
 * Beyond that, finished rows (done, cancelled) are counted in a sample of about this many pages
 * (TABLESAMPLE SYSTEM: whole pages, each taken with the same probability) and scaled up: the
 * stats then read about 150 pages (some 10,000 rows) whatever the table holds. Pages of a large
 * table are mostly outside shared buffers: beside 10,000,000 rows, 300 sampled pages took 55–65
 * ms on a loaded two-core machine, most of the 100 ms the stats may take. A name or status with
 * a tenth of the table comes out within some 5 %, one with a hundredth within some 30 % (more
 * when its rows sit together in a few pages, as a burst's do). Unfinished and dead rows are
 * still counted exactly, from their partial indexes.
 */
export const SAMPLE_PAGES = 150;

/** How the stats count the finished rows of a table: all of them, or a sample of `percent` of its pages. */
export type FinishedCount = { readonly exact: true } | { readonly exact: false; readonly percent: number };

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
  return pages <= EXACT_MAX_PAGES ? { exact: true } : { exact: false, percent: (100 * SAMPLE_PAGES) / pages };
}

/**
 * `name, status, n`: the finished rows (done, cancelled) per name and status, estimated from a
 * sample of `percent` of the table's pages, scaled to the whole table.
 * @internal
 */
export function sampledFinished(table: LeasedTable<unknown>, percent: number): RawBuilder<unknown> {
  return sql`
    SELECT ${sql.ref(table.nameColumn)} AS name, status, round(count(*) * 100 / ${percent}::float8) AS n
    FROM ${tableRef(table)} TABLESAMPLE SYSTEM (${percent}::float4)
    WHERE status IN ('done', 'cancelled')
    GROUP BY 1, 2`;
}
