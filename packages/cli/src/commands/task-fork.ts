import { forkTask, isLeaseholdError } from '@leasehold/core';
import { CommandError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { parseTaskId } from '../format/ids.js';
import type { CommandHandler } from './context.js';

/** `leasehold task fork <id> --from <step> --json` output. */
export interface ForkReport {
  /** The new task's id. */
  readonly id: string;
  /** The task it was forked from. */
  readonly forkedFrom: string;
  /** The recorded step it runs again from. */
  readonly fromStep: string;
}

/**
 * `leasehold task fork <id> --from <step>`: core's `forkTask`. Inserts a new run of the workflow
 * that keeps the steps the task recorded before `<step>` and runs the rest; the task itself is
 * unchanged. No such task, or a step it cannot fork from: exit 1, nothing inserted.
 */
export const taskForkCommand: CommandHandler = async (ctx) => {
  const id = parseTaskId(ctx.invocation.ids[0]!);
  const { schema } = ctx.invocation;
  const fromStep = ctx.invocation.fromStep!;
  const tables = await ctx.tables();
  if (tables.task === undefined) throw new CommandError(`schema "${schema}" has no task table`);
  let fork: { id: string };
  try {
    fork = await forkTask(ctx.pool, id, { fromStep, schema });
  } catch (error) {
    if (isLeaseholdError(error, 'NOT_FOUND')) throw new CommandError(`no task ${id} in schema "${schema}"; nothing was forked`);
    if (isLeaseholdError(error, 'CONFIG')) throw new CommandError(`${error.message}; nothing was forked`);
    throw error;
  }
  const report: ForkReport = { id: fork.id, forkedFrom: id, fromStep };
  if (ctx.invocation.json) ctx.io.out(JSON.stringify(report));
  else ctx.io.out(`forked task:${id} from step "${fromStep}" as task:${fork.id} (pending)`);
  return EXIT_CODES.ok;
};
