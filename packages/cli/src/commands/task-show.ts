import { getTask } from '@leasehold/core';
import { CommandError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { parseTaskId } from '../format/ids.js';
import { renderTask } from '../format/task.js';
import type { CommandHandler } from './context.js';

/**
 * `leasehold task show <id>`: core's `getTask`, the task with its recorded steps and its children
 * (`--json`: the `TaskInfo` itself, dates as ISO strings). No such task: exit 1.
 */
export const taskShowCommand: CommandHandler = async (ctx) => {
  const id = parseTaskId(ctx.invocation.ids[0]!);
  const { schema } = ctx.invocation;
  const tables = await ctx.tables();
  if (tables.task === undefined) throw new CommandError(`schema "${schema}" has no task table`);
  const task = await getTask(ctx.pool, id, { schema });
  if (task === null) throw new CommandError(`no task ${id} in schema "${schema}"`);
  ctx.io.out(ctx.invocation.json ? JSON.stringify(task) : renderTask(task, ctx.io.columns));
  return EXIT_CODES.ok;
};
