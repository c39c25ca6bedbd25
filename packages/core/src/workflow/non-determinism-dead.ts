import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskDeadNonDeterminism, type NonDeterminismDeadRow } from '../sql/task-dead-non-determinism.js';

/**
 * Dead runs that failed replay — their code no longer matched what they recorded
 * (`NonDeterminismError`, `last_error` starting `NonDeterminismError: `) — per task name and
 * version. Their recorded steps are kept: deploy code that can run them, then retry them
 * (`leasehold dead retry`). Reads the dead rows only. Takes no locks.
 *
 * @example
 * const failed = await nonDeterminismDeadCounts(pool);
 * const total = failed.reduce((n, r) => n + r.dead, 0);
 */
export async function nonDeterminismDeadCounts(executor: Executor, options: { schema?: string } = {}): Promise<NonDeterminismDeadRow[]> {
  return taskDeadNonDeterminism(executor, taskTable(options.schema));
}
