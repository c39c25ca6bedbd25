import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { tableRef } from './table-ref.js';

/** Rows of one name finished per minute over the last `minutes`, oldest minute first. */
export interface Throughput {
  readonly name: string;
  /** `perMinute[i]`: rows that became `done` between `minutes - i` and `minutes - i - 1` minutes ago. */
  readonly perMinute: number[];
  readonly total: number;
}

/**
 * Finished rows per name and minute over the last `minutes` (a skipped dead row counts: it is
 * `done` too), from `done_at` through `<table>_done_at` (done_at) WHERE status = 'done'. Its cost
 * follows the rows finished in that window, not the table. Takes no locks.
 *
 * @example
 * const lastHour = await leasedThroughput(pool, taskTable(), 60);
 */
export async function leasedThroughput(executor: Executor, table: LeasedTable<unknown>, minutes: number): Promise<Throughput[]> {
  const rows = await execute<{ name: string; ago: number; n: string }>(
    executor,
    sql`
      SELECT ${sql.ref(table.nameColumn)} AS name,
             floor(extract(epoch FROM now() - done_at) / 60)::int AS ago,
             count(*) AS n
      FROM ${tableRef(table)}
      WHERE status = 'done' AND done_at > now() - make_interval(mins => ${minutes})
      GROUP BY 1, 2
    `,
  );
  const byName = new Map<string, number[]>();
  for (const r of rows) {
    const series = byName.get(r.name) ?? new Array<number>(minutes).fill(0);
    byName.set(r.name, series);
    const i = minutes - 1 - Math.min(minutes - 1, Math.max(0, r.ago));
    series[i] = (series[i] ?? 0) + Number(r.n);
  }
  return [...byName].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, perMinute]) => ({ name, perMinute, total: perMinute.reduce((s, n) => s + n, 0) }));
}
