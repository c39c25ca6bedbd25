import { parseDuration, type Duration } from '../duration.js';
import { ConfigError, TaskNotFoundError } from '../errors.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { taskTable } from '../leased-table.js';
import { taskEventRead } from '../sql/task-events.js';
import type { PgPoolLike } from '../sql/transaction.js';
import { eventKey, type EventDefinition } from './define-event.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';
import { waitPooler, watchTask, type WaitForResultOptions } from './wait-for-result.js';

/** Options of {@link getEvent}. */
export interface GetEventOptions extends Pick<WaitForResultOptions, 'noPreparedStatements' | 'listenConnectionString' | 'pollInterval'> {
  /**
   * While the event is not set, wait this long for it, then resolve `undefined`. `0` reads once
   * and does not wait.
   * @defaultValue no limit: wait until it is set
   */
  timeout?: Duration;
  /** Give up when this fires, rejecting with its reason. */
  signal?: AbortSignal;
  /** Schema of the task table. @defaultValue 'leasehold' */
  schema?: string;
}

const GET_EVENT_OPTIONS = optionKeys<GetEventOptions>()('getEvent', ['timeout', 'signal', 'schema', 'noPreparedStatements', 'listenConnectionString', 'pollInterval']);

/**
 * The latest value a workflow set for a progress event with `ctx.setEvent` (docs/workflows.md,
 * "Progress events"), while it runs, parks or after it ended. When the task has not set it yet,
 * waits for it: woken by LISTEN/NOTIFY (each write of a task's event notifies with its id), never
 * by polling, as `waitForResult` is (same connection handling, same pooler options). Resolves
 * `undefined` when `timeout` passes first: "not set yet" is an answer here, not a failure, so a
 * page can show it as such. Rejects with `TaskNotFoundError` when there is no such task (or it
 * was purged), as `waitForResult` does.
 *
 * @example
 * const payment = defineEvent<{ stage: 'captured' | 'approved' }>('payment');
 * // in the workflow: await ctx.setEvent(payment, { stage: 'captured' });
 * const now = await getEvent(pool, orderRun, payment, { timeout: '2s' }); // { stage } | undefined
 */
export async function getEvent<T = unknown>(
  pool: PgPoolLike,
  task: string | TaskRef,
  event: EventDefinition<T> | string,
  options: GetEventOptions = {},
): Promise<T | undefined> {
  checkOptionKeys(options, GET_EVENT_OPTIONS);
  const id = taskId(task);
  const key = eventKey(event, 'event');
  const table = taskTable(options.schema);
  const timeoutMs = options.timeout === undefined ? undefined : parseDuration(options.timeout, 'timeout', { allowZero: true });
  const signal = options.signal;
  if (signal !== undefined && typeof signal.aborted !== 'boolean') throw new ConfigError('signal', 'Expected `signal` to be an AbortSignal');
  const pooler = waitPooler(pool, options);
  signal?.throwIfAborted();

  const read = async () => {
    const found = await taskEventRead(pool, table, id, key);
    if (!found.task) return { error: new TaskNotFoundError(id) };
    return found.set ? { value: found.value as T } : undefined;
  };
  if (timeoutMs === 0) {
    const now = await read();
    if (now?.error !== undefined) throw now.error;
    return now?.value;
  }
  return watchTask<T | undefined>(pool, table, id, 'event', pooler, { timeoutMs, signal, onTimeout: () => ({ value: undefined }) }, read);
}
