import { TaskNotFoundError } from '../errors.js';
import { checkText } from '../input/text.js';
import { INPUT_LIMITS } from '../input/limits.js';
import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskCancelTree } from '../sql/task-cancel.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';

/** Options of {@link cancelTask}. */
export interface CancelOptions {
  /** Why, kept in the task's `resolution` ('cancelled: <reason>'). @defaultValue 'cancelled' */
  reason?: string;
  /** Schema of the task table. @defaultValue 'leasehold' */
  schema?: string;
}

const CANCEL_OPTIONS = optionKeys<CancelOptions>()('cancelTask', ['reason', 'schema']);

/**
 * Cancels a task and its unfinished children (and theirs), in the caller's transaction when
 * `executor` is one. A pending, sleeping, waiting or dead task becomes `cancelled` at once; a
 * running one too, and its handler's `signal` fires with a `CancelledError` within one heartbeat
 * interval, its later writes refused. Returns the ids it cancelled (empty when the task had
 * ended already); throws `TaskNotFoundError` when there is no such task.
 *
 * @example
 * const { cancelled } = await cancelTask(pool, orderWorkflowId, { reason: 'customer cancelled' });
 */
export async function cancelTask(executor: Executor, task: string | TaskRef, options: CancelOptions = {}): Promise<{ cancelled: string[] }> {
  checkOptionKeys(options, CANCEL_OPTIONS);
  const id = taskId(task);
  const reason = options.reason === undefined ? 'cancelled' : checkText(options.reason, 'reason', { maxBytes: INPUT_LIMITS.keyBytes, allowEmpty: true });
  const outcome = await taskCancelTree(executor, taskTable(options.schema), id, reason);
  if (!outcome.found) throw new TaskNotFoundError(id);
  return { cancelled: outcome.cancelled };
}
