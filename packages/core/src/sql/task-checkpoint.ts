import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { fence } from './fence.js';
import { tableRef } from './table-ref.js';

/**
 * Fenced write of a task's progress (`WHERE id AND status = 'processing' AND lease_version`).
 * Returns false when the lease moved on. Locks the one row.
 */
export async function taskCheckpoint(
  executor: Executor,
  table: LeasedTable<unknown>,
  task: { readonly id: string; readonly leaseVersion: number },
  stateJson: string,
): Promise<boolean> {
  const rows = await execute<{ id: string }>(
    executor,
    sql`
      UPDATE ${tableRef(table)} AS t
      SET checkpoint = ${stateJson}::jsonb
      WHERE ${fence('t', task.id, task.leaseVersion)}
      RETURNING t.id
    `,
  );
  return rows.length === 1;
}
