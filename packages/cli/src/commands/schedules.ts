import { scheduleList, scheduleSetPaused, type ScheduleRow } from '@leasehold/core';
import { CommandError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { renderTable } from '../format/table.js';
import type { CommandContext, CommandHandler } from './context.js';

/** `leasehold schedules --json` output. */
export interface SchedulesReport {
  readonly schema: string;
  readonly schedules: readonly ScheduleRow[];
}

/** What a schedule is doing: paused by a person, fired by a running worker, or declared by none now. */
function stateOf(s: ScheduleRow): 'paused' | 'running' | 'not running' {
  if (s.pausedAt !== null) return 'paused';
  return s.alive ? 'running' : 'not running';
}

/** The schedules as a text table, one line each. */
export function renderSchedules(report: SchedulesReport): string {
  if (report.schedules.length === 0) return `no schedules in schema "${report.schema}"`;
  const rows = report.schedules.map((s) => [
    s.name, s.taskName, s.cron, s.timezone, s.catchUp, s.lastTick?.toISOString() ?? '—', stateOf(s), s.seenBy ?? '—', s.seenAt.toISOString(),
  ]);
  return renderTable(['SCHEDULE', 'TASK', 'CRON', 'TIME ZONE', 'CATCH UP', 'LAST TICK', 'STATE', 'SEEN BY', 'SEEN AT'], rows, [4]);
}

/** `leasehold schedules [list]`: every schedule with its cron, last tick and whether it runs. */
export const schedulesListCommand: CommandHandler = async (ctx) => {
  await ctx.tables(); // a clear error when the schema is not migrated
  const report = { schema: ctx.invocation.schema, schedules: await scheduleList(ctx.pool, ctx.invocation.schema) };
  ctx.io.out(ctx.invocation.json ? JSON.stringify(report) : renderSchedules(report));
  return EXIT_CODES.ok;
};

/**
 * `leasehold schedules pause <names>` and `… resume <names>`. An unknown name changes nothing and
 * exits 1. Ticks while paused are skipped; resuming does not catch them up.
 */
export function schedulesPauseCommand(paused: boolean): CommandHandler {
  return async (ctx: CommandContext) => {
    await ctx.tables();
    const { schema, ids: names } = ctx.invocation;
    const known = new Set((await scheduleList(ctx.pool, schema)).map((s) => s.name));
    const unknown = names.filter((n) => !known.has(n));
    if (unknown.length > 0) throw new CommandError(`no schedule named ${unknown.map((n) => `"${n}"`).join(', ')} in schema "${schema}"; nothing changed`);
    const changed = await scheduleSetPaused(ctx.pool, schema, names, paused);
    const unchanged = [...new Set(names)].filter((n) => !changed.includes(n)).sort();
    const verb = paused ? 'paused' : 'resumed';
    if (ctx.invocation.json) ctx.io.out(JSON.stringify({ [verb]: changed, unchanged }));
    else {
      if (changed.length > 0) ctx.io.out(`${verb}: ${changed.join(', ')}`);
      if (unchanged.length > 0) ctx.io.out(`already ${paused ? 'paused' : 'running'}: ${unchanged.join(', ')}`);
    }
    return EXIT_CODES.ok;
  };
}
