import { ConfigError, TaskNotFoundError } from '../errors.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { checkName } from '../input/text.js';
import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskForkInsert, taskForkPoint } from '../sql/task-fork.js';
import { inTransaction } from '../sql/transaction.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';

/** Options of {@link forkTask}. */
export interface ForkOptions {
  /**
   * The recorded call (a step, database step, sleep, spawn or signal wait, by the name it was
   * recorded under) from which the fork runs again: the calls recorded before it are kept, it and
   * every later one run anew.
   */
  fromStep: string;
  /** Schema of the task table. @defaultValue 'leasehold' */
  schema?: string;
}

const FORK_OPTIONS = optionKeys<ForkOptions>()('forkTask', ['fromStep', 'schema']);

/**
 * Starts a new run of a workflow that keeps what the original recorded before `fromStep` and runs
 * the rest (a fork, a reset): a new task of the same name, payload, version, priority, attempt
 * limit and limit key, pending, whose replay returns the original's recorded results for the
 * calls before `fromStep`, so only `fromStep` and what follows run again. It links to the original
 * (`forkedFrom` in {@link getTask}). The original is read, not changed, in whatever status it is
 * (done, dead, waiting, even running). In the caller's transaction when `executor` is one.
 *
 * Kept: the records before the point, the patch markers taken before it, the progress events as
 * those records left them. Not kept: signals (a wait before the point keeps the payload it
 * took), and children: those spawned before the point stay the original's, the fork reads their
 * results by id (it refuses while one has not ended); a spawn at or after the point spawns anew.
 * A sleep at or after the point sleeps its full length from its first run in the fork.
 *
 * Throws `TaskNotFoundError` when there is no such task, and a `ConfigError` when `fromStep` is
 * not a call the task recorded (the message lists those it did), when the task is ordered (a
 * `groupKey`), or when a child spawned before the point has not ended.
 *
 * @example
 * // the charge failed for good; the code is fixed: run it again from the charge, keeping the
 * // reservation made before it
 * const fork = await forkTask(pool, orderId, { fromStep: 'charge' });
 * const result = await waitForResult(pool, fork);
 */
export async function forkTask<R = unknown>(executor: Executor, task: string | TaskRef<R>, options: ForkOptions): Promise<TaskRef<R>> {
  checkOptionKeys(options, FORK_OPTIONS);
  const id = taskId(task);
  const fromStep = checkName(options?.fromStep, 'fromStep', 'the step name');
  const table = taskTable(options.schema);
  return inTransaction(
    executor,
    async (trx) => {
      const point = await taskForkPoint(trx, table, id, fromStep);
      if (point === undefined) throw new TaskNotFoundError(id);
      if (point.groupKey !== null) {
        throw new ConfigError('task', `Task ${id} is ordered (group "${point.groupKey}"): an ordered task cannot be forked, its fork would run outside its group's order`);
      }
      if (point.position === null) {
        const listed = point.recorded.length === 0 ? 'it recorded none' : `it recorded: ${point.recorded.map((n) => `"${n}"`).join(', ')}`;
        throw new ConfigError('fromStep', `Task ${id} has no recorded call "${fromStep}" to fork from (${listed})`);
      }
      if (point.openChildren.length > 0) {
        throw new ConfigError(
          'fromStep',
          `Task ${id} spawned children before "${fromStep}" that have not ended (${point.openChildren.join(', ')}): the fork would read their results by id; wait for them, or fork at or before their spawn`,
        );
      }
      return { id: await taskForkInsert(trx, table, id, fromStep, point.position) };
    },
    'the fork point is read and the fork written together',
  );
}
