import { ConfigError, listTasks, type TaskList } from '@leasehold/core';
import { CommandError, UsageError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { renderTable } from '../format/table.js';
import type { CommandHandler } from './context.js';

const OPTION_OF: Readonly<Record<string, string>> = { after: '--after', limit: '--limit', name: '--name', status: '--status', parent: '--parent' };

/**
 * `leasehold tasks list [--name a,b] [--status s,t] [--parent id] [--created-after t]
 * [--created-before t] [--limit 50] [--after cursor]`: core's `listTasks`, a page of tasks newest
 * first, and the `--after` of the next page when there is one (`--json`: `{ tasks, next }`, dates
 * as ISO strings). A cursor that is not one is a wrong command line (exit 2).
 */
export const tasksListCommand: CommandHandler = async (ctx) => {
  const { schema, tasksList: a } = ctx.invocation;
  const tables = await ctx.tables();
  if (tables.task === undefined) throw new CommandError(`schema "${schema}" has no task table`);
  let page: TaskList;
  try {
    page = await listTasks(
      ctx.pool,
      {
        ...(a.names.length > 0 ? { name: a.names } : {}),
        ...(a.statuses.length > 0 ? { status: a.statuses } : {}),
        ...(a.parent === undefined ? {} : { parent: a.parent }),
        ...(a.createdAfter === undefined ? {} : { createdAfter: a.createdAfter }),
        ...(a.createdBefore === undefined ? {} : { createdBefore: a.createdBefore }),
      },
      { limit: a.limit, after: a.after ?? null, schema },
    );
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(`${OPTION_OF[error.option] ?? error.option}: ${error.message}`);
    throw error;
  }
  if (ctx.invocation.json) {
    ctx.io.out(JSON.stringify(page));
    return EXIT_CODES.ok;
  }
  if (page.tasks.length === 0) ctx.io.out(`no tasks match in schema "${schema}"`);
  else ctx.io.out(render(page, ctx.io.columns));
  if (page.next !== null) ctx.io.out(`\nmore: leasehold tasks list … --after ${page.next}`);
  return EXIT_CODES.ok;
};

const utc = (date: Date) => date.toISOString().slice(0, 19).replace('T', ' ');

function render(page: TaskList, columns: number): string {
  const headers = ['ID', 'NAME', 'STATUS', 'ATTEMPTS', 'PARENT', 'CREATED (UTC)', 'ENDED (UTC)'];
  const rows = page.tasks.map((t) => [
    `task:${t.id}`,
    t.name,
    t.status === 'waiting' && t.waitFor !== null ? `waiting (${t.waitFor})` : t.status,
    `${t.attempts}/${t.maxAttempts}`,
    t.parentId === null ? '—' : `task:${t.parentId}`,
    utc(t.createdAt),
    t.doneAt === null ? '—' : utc(t.doneAt),
  ]);
  if (!page.tasks.some((t) => t.lastError !== null)) return renderTable(headers, rows);
  // the last error takes the room the other columns leave, as dead list's does
  const used = Math.max(...renderTable(headers, rows).split('\n').map((l) => l.length)) + 2;
  const room = Math.max(30, columns - used);
  return renderTable([...headers, 'LAST ERROR'], rows.map((r, i) => [...r, firstLine(page.tasks[i]!.lastError ?? '', room)]));
}

function firstLine(text: string, room: number): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > room ? `${line.slice(0, room - 1)}…` : line;
}
