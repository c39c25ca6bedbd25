import { ConfigError, TaskNotFoundError, toError } from '../errors.js';
import { checkKey } from '../input/text.js';
import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskSignalSend } from '../sql/task-signal-send.js';
import type { TaskStatus } from '../task-status.js';
import { checkSignal, type SignalDefinition } from './define-signal.js';
import { recordedJson } from './json-value.js';
import type { TaskRef } from './task-ref.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';

/** What {@link sendSignal} found. */
export interface SignalSent {
  /**
   * False: the task had ended (done or cancelled), so nothing was stored. True for a `dead` task:
   * the signal is stored, since a dead task can be retried (`leasehold dead retry`) and its rerun
   * takes the signal as it would one sent before it waited.
   */
  readonly delivered: boolean;
  /** The task's status when the signal was sent. */
  readonly status: TaskStatus;
}

const SIGNAL_OPTIONS = optionKeys<{ schema?: string }>()('sendSignal', ['schema']);

/**
 * Sends `signal` to a task, in the caller's transaction when `executor` is one: committed, the
 * task's next `ctx.waitForSignal(signal)` (or the one it is parked in) gets `payload`; rolled
 * back, it never does. A signal sent before the task waits is kept for it; signals of one name
 * are taken oldest first. Throws `TaskNotFoundError` when there is no such task.
 *
 * @example
 * await db.transaction().execute(async (trx) => {
 *   await trx.updateTable('order').set({ approved: true }).where('id', '=', orderId).execute();
 *   await sendSignal(trx, workflowId, approved, { by: user.email });
 * });
 */
export async function sendSignal<S>(
  executor: Executor,
  task: string | TaskRef,
  signal: SignalDefinition<S>,
  ...[payload, options = {}]: undefined extends S ? [payload?: S, options?: { schema?: string }] : [payload: S, options?: { schema?: string }]
): Promise<SignalSent> {
  checkOptionKeys(options, SIGNAL_OPTIONS);
  const id = taskId(task);
  const { name } = checkSignal(signal, 'signal');
  let payloadJson: string | null;
  try {
    payloadJson = recordedJson(payload, `the payload of signal "${name}"`);
  } catch (error) {
    // bad input of this call: a ConfigError, before anything is written
    throw new ConfigError('payload', toError(error).message);
  }
  const status = await taskSignalSend(executor, taskTable(options.schema), id, name, payloadJson);
  if (status === null) throw new TaskNotFoundError(id);
  return { delivered: status !== 'done' && status !== 'cancelled', status };
}

/** A task id as given: a string of digits, or a handle with one. @internal */
export function taskId(task: string | TaskRef): string {
  const id = typeof task === 'string' ? task : task?.id;
  const checked = checkKey(id, 'id');
  if (!/^[1-9][0-9]{0,18}$/.test(checked)) throw new ConfigError('id', 'Expected a task id: a positive integer, as a string');
  return checked;
}
