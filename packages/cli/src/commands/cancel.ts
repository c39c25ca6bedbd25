import { userInfo } from 'node:os';
import { cancelTask, getTask, INPUT_LIMITS, isLeaseholdError, type TaskStatus } from '@leasehold/core';
import { CommandError, UsageError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { parseTaskId } from '../format/ids.js';
import type { CommandHandler } from './context.js';

/** `leasehold cancel <id> --json` output. */
export interface CancelReport {
  readonly id: string;
  /** The task's status after the command: `cancelled`, or how it had ended already. */
  readonly status: TaskStatus;
  /** Ids moved to `cancelled`: the task (unless it had ended), then its unfinished descendants. */
  readonly cancelled: readonly string[];
}

/**
 * `leasehold cancel <id> [--reason text]`: core's `cancelTask`. Cancels the task and its
 * unfinished descendants in one transaction; a task that had ended stays as it is (its unfinished
 * descendants are still cancelled). No such task: exit 1, nothing changed.
 */
export const cancelCommand: CommandHandler = async (ctx) => {
  const id = parseTaskId(ctx.invocation.ids[0]!);
  const { schema } = ctx.invocation;
  const reason = ctx.invocation.reason ?? `${userInfo().username} with the leasehold CLI`;
  // core's limit for the reason; refused here so the message names the option
  if (Buffer.byteLength(reason) > INPUT_LIMITS.keyBytes) throw new UsageError(`--reason must be at most ${INPUT_LIMITS.keyBytes} bytes`);
  const tables = await ctx.tables();
  if (tables.task === undefined) throw new CommandError(`schema "${schema}" has no task table`);
  let cancelled: string[];
  try {
    ({ cancelled } = await cancelTask(ctx.pool, id, { reason, schema }));
  } catch (error) {
    if (isLeaseholdError(error, 'NOT_FOUND')) throw new CommandError(`no task ${id} in schema "${schema}"; nothing was cancelled`);
    throw error;
  }
  // an ended task is final (done or cancelled), so reading it after the cancel cannot race; gone
  // by then, a purge deleted it, and purge deletes only done rows
  const status = cancelled.includes(id) ? 'cancelled' : ((await getTask(ctx.pool, id, { schema }))?.status ?? 'done');
  const report: CancelReport = { id, status, cancelled };
  if (ctx.invocation.json) {
    ctx.io.out(JSON.stringify(report));
    return EXIT_CODES.ok;
  }
  const descendants = cancelled.filter((c) => c !== id).map((c) => `task:${c}`);
  const theirs = `${descendants.length} unfinished descendant(s): ${descendants.join(', ')}`;
  if (cancelled.includes(id)) ctx.io.out(`cancelled task:${id}${descendants.length === 0 ? ' (it had no unfinished descendants)' : ` and ${theirs}`}`);
  else ctx.io.out(`task:${id} had already ended (${status}); ${descendants.length === 0 ? 'nothing was cancelled' : `cancelled its ${theirs}`}`);
  return EXIT_CODES.ok;
};
