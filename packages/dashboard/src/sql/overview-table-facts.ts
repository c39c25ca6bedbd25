import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { tableRef } from './table-ref.js';

/** How many done rows a table holds: counted, or estimated from PostgreSQL's statistics. */
export type DoneTotal =
  | { readonly kind: 'counted'; readonly n: number }
  | { readonly kind: 'estimated'; readonly n: number; readonly analysedAt: Date | null }
  /** A large table never analysed: nothing to estimate from. */
  | { readonly kind: 'unknown' };

/** What the overview learns about a table before counting: its done total, and whether names are indexed. */
export interface TableFacts {
  readonly done: DoneTotal;
  /** The table has core's `<table>_name_status` index (name, status, id): per-name counts read it alone. */
  readonly byName: boolean;
}

/**
 * Up to this many pages (2.4 MB, some 15,000 rows), done rows are counted: a read of the whole
 * table costs about what the estimate's catalog reads do. Core's `leaseQueueStats` draws the same line.
 */
export const COUNT_DONE_MAX_PAGES = 300;

/**
 * The table's done total and whether its names are indexed, from the catalog: done rows are
 * counted in a small table, and in a large one estimated as the planner does — the rows
 * `ANALYZE` last counted per page, times the table's pages now, times the share of `done` in the
 * status column's statistics (`pg_stats`, the most common values: with six statuses all are
 * listed). No finished row is read, so the estimate is as old as the last (auto)analyze, which
 * the page shows. Takes no locks.
 */
export async function overviewTableFacts(executor: Executor, table: LeasedTable<unknown>, countMaxPages = COUNT_DONE_MAX_PAGES): Promise<TableFacts> {
  const [row] = await execute<{
    pages: string; reltuples: number; relpages: number; share: number | null; analysed_at: Date | null; by_name: boolean;
  }>(
    executor,
    sql`
      SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint AS pages, c.reltuples::float8 AS reltuples, c.relpages,
             (SELECT s.most_common_freqs[array_position(s.most_common_vals::text::text[], 'done')]::float8
              FROM pg_stats AS s
              WHERE s.schemaname = ${table.schema} AND s.tablename = ${table.table} AND s.attname = 'status' AND NOT s.inherited) AS share,
             greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) AS analysed_at,
             to_regclass(format('%I.%I', ${table.schema}::text, ${`${table.table}_name_status`}::text)) IS NOT NULL AS by_name
      FROM pg_class AS c
      WHERE c.oid = format('%I.%I', ${table.schema}::text, ${table.table}::text)::regclass
    `,
  );
  const byName = row?.by_name === true;
  const pages = Number(row?.pages ?? 0);
  if (row === undefined || pages <= countMaxPages) {
    const [counted] = await execute<{ n: string }>(executor, sql`SELECT count(*) AS n FROM ${tableRef(table)} WHERE status = 'done'`);
    return { done: { kind: 'counted', n: Number(counted?.n ?? 0) }, byName };
  }
  // reltuples is -1 and relpages 0 until the first VACUUM or ANALYZE
  // and a table never analysed has no statistics for its status column
  if (row.reltuples < 0 || row.relpages <= 0 || (row.share === null && row.analysed_at === null)) return { done: { kind: 'unknown' }, byName };
  const n = Math.round((row.reltuples / row.relpages) * pages * (row.share ?? 0));
  return { done: { kind: 'estimated', n, analysedAt: row.analysed_at }, byName };
}
