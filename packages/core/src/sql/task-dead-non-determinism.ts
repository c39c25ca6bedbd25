import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/**
 * How a dead run's `last_error` begins when its code no longer matched what it recorded
 * (`NonDeterminismError`, docs/workflows.md).
 */
export const NON_DETERMINISM_ERROR_PREFIX = 'NonDeterminismError: ';

/** Dead runs of one task name and version that failed replay. */
export interface NonDeterminismDeadRow {
  /** Task name. */
  readonly name: string;
  readonly version: number;
  readonly dead: number;
}

/**
 * Dead runs whose `last_error` says they failed replay, per task name and version. Reads the dead
 * rows only (the `task_dead` index), however many finished rows the table keeps. Takes no locks.
 */
export async function taskDeadNonDeterminism(executor: Executor, table: LeasedTable<unknown>): Promise<NonDeterminismDeadRow[]> {
  const rows = await execute<{ name: string; version: number; dead: string }>(
    executor,
    sql`
      SELECT name, version, count(*) AS dead FROM ${tableRef(table)}
      WHERE status = 'dead' AND starts_with(last_error, ${NON_DETERMINISM_ERROR_PREFIX}::text)
      GROUP BY 1, 2
      ORDER BY 1, 2
    `,
  );
  return rows.map((r) => ({ name: r.name, version: r.version, dead: Number(r.dead) }));
}
