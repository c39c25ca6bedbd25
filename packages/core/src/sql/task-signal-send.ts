import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { TaskStatus } from '../task-status.js';
import { execute, type Executor } from './execute.js';
import { signalTableRef } from './task-steps.js';
import { tableRef } from './table-ref.js';
import { inTransaction } from './transaction.js';
import { notifySleepers, wakeLockCte } from './wake-sleepers.js';

/**
 * Stores a signal for a task and wakes the task if it is parked waiting for that signal, in one
 * transaction (the caller's when `executor` is one: rolled back, the signal was never sent). The
 * task's row is locked first, as the waiting side locks it before it checks for signals and
 * parks: whichever comes second sees the other's work. Returns the task's status as found, or
 * null when there is no such task; an ended task (done, cancelled) stores nothing.
 */
export async function taskSignalSend(
  executor: Executor,
  table: LeasedTable<unknown>,
  taskId: string,
  name: string,
  payloadJson: string | null,
): Promise<TaskStatus | null> {
  return inTransaction(
    executor,
    async (trx) => {
      const t = tableRef(table);
      // a claim meeting this lock passes over a pending task: see wakeLockCte
      const [task] = await execute<{ status: TaskStatus }>(
        trx,
        sql`
          WITH ${wakeLockCte(table)}
          SELECT s.status, ${notifySleepers(table, sql`s.status IN ('pending', 'waiting')`)} AS woke
          FROM ${t} AS s CROSS JOIN wake WHERE s.id = ${taskId}::bigint FOR NO KEY UPDATE OF s
        `,
      );
      if (task === undefined) return null;
      if (task.status === 'done' || task.status === 'cancelled') return task.status;
      await execute(
        trx,
        sql`INSERT INTO ${signalTableRef(table)} (task_id, name, payload) VALUES (${taskId}::bigint, ${name}::text, ${payloadJson}::jsonb)`,
      );
      // due now as a scheduled row: only INSERTs may add to the claim index below a worker's
      // ready floor (see ReadyFloor)
      await execute(
        trx,
        sql`
          UPDATE ${t} SET status = 'pending', available_at = now(), scheduled = true, wait_for = NULL
          WHERE id = ${taskId}::bigint AND status = 'waiting' AND wait_for = ${`signal:${name}`}::text
        `,
      );
      return task.status;
    },
    'a signal and the wake of its waiting task commit together',
  );
}
