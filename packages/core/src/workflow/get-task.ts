import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskChildrenList, taskRead, taskStepsList, type StepReadRow, type TaskReadRow } from '../sql/task-read.js';
import type { TaskStatus } from '../task-status.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';

/** A task as {@link getTask} reads it. */
export interface TaskInfo<R = unknown> extends Omit<TaskReadRow, 'result'> {
  /** What its handler returned, once `done`; undefined before, or when it returned nothing. */
  readonly result: R | undefined;
  /** Its recorded workflow steps, in the order first recorded. */
  readonly steps: readonly StepReadRow[];
  /** The tasks it spawned (`ctx.spawn`), by id. */
  readonly children: ReadonlyArray<{ readonly id: string; readonly name: string; readonly status: TaskStatus }>;
}

const GET_OPTIONS = optionKeys<{ schema?: string }>()('getTask', ['schema']);

/**
 * Reads a task: status, result or last error, its recorded steps and its children; null when
 * there is no such task. Takes no locks.
 *
 * @example
 * const task = await getTask(pool, handle); // handle from enqueue: result typed
 * if (task?.status === 'done') console.log(task.result);
 */
export async function getTask<R = unknown>(executor: Executor, task: string | TaskRef<R>, options: { schema?: string } = {}): Promise<TaskInfo<R> | null> {
  checkOptionKeys(options, GET_OPTIONS);
  const id = taskId(task);
  const table = taskTable(options.schema);
  const row = await taskRead(executor, table, id);
  if (row === undefined) return null;
  const [steps, children] = await Promise.all([taskStepsList(executor, table, id), taskChildrenList(executor, table, id)]);
  return { ...row, result: row.result as R | undefined, steps, children };
}
