import type pg from 'pg';
import type { TableName } from '../args.js';
import { EXIT_CODES } from '../exit-codes.js';
import { formatAge } from '../format/age.js';
import { renderPrometheus } from '../format/prometheus.js';
import { readLimits, renderLimits } from '../format/limits.js';
import { renderTable } from '../format/table.js';
import { readVersions, renderVersions, versionsWorthShowing, type VersionsReport } from '../format/versions.js';
import type { LeasedTables } from '../leased-tables.js';
import { queueStats, type QueueStats } from '../sql/queue-stats.js';
import { scheduleList, type LimitRow, type ScheduleRow } from '@leasehold/core';
import { errorCode } from '@leasehold/core/internal';
import { renderSchedules } from './schedules.js';
import type { CommandHandler } from './context.js';

/** `leasehold stats --json` output. */
export interface StatsReport {
  readonly schema: string;
  readonly tables: ReadonlyArray<{
    readonly table: TableName;
    /** One entry per task name (task table) or event type (outbox). */
    readonly queues: readonly QueueStats[];
    /** All queues of the table together. */
    readonly total: Omit<QueueStats, 'name'>;
  }>;
  /** The task table's limits (`defineLimit`): bounds, running leases, starts in the window. */
  readonly limits: readonly LimitRow[];
  /** The schedules workers declared (`defineSchedule`): cron, last tick, paused or running. */
  readonly schedules: readonly ScheduleRow[];
  /** Workflow versions in flight and replay failures; null without a task table or on a schema before core migration 11. */
  readonly versions: VersionsReport | null;
}

/** Reads the stats of every table of the schema. */
export async function readStats(pool: pg.Pool, tables: LeasedTables): Promise<StatsReport> {
  const read = tables.list.map(async ([table, leased]) => {
    const queues = await queueStats(pool, leased);
    return { table, queues, total: totalOf(queues) };
  });
  const limits = tables.task === undefined ? [] : await readLimits(pool, tables.schema);
  const schedules = tables.task === undefined ? [] : await readSchedules(pool, tables.schema);
  const versions = tables.task === undefined ? null : await readVersions(pool, tables.schema);
  return { schema: tables.schema, tables: await Promise.all(read), limits, schedules, versions };
}

/** The schedules of `schema`; none on a schema that predates them (core migration 4). */
async function readSchedules(pool: pg.Pool, schema: string): Promise<ScheduleRow[]> {
  try {
    return await scheduleList(pool, schema);
  } catch (error) {
    if (errorCode(error) === '42P01') return []; // undefined_table (the driver's code, under core's DatabaseNotReadyError)
    throw error;
  }
}

function totalOf(queues: readonly QueueStats[]): Omit<QueueStats, 'name'> {
  const sum = (key: 'pending' | 'blocked' | 'processing' | 'done' | 'dead' | 'expiredLeases') => queues.reduce((n, q) => n + q[key], 0);
  const ages = queues.flatMap((q) => (q.oldestPendingAgeMs === null ? [] : [q.oldestPendingAgeMs]));
  return {
    pending: sum('pending'),
    blocked: sum('blocked'),
    processing: sum('processing'),
    done: sum('done'),
    dead: sum('dead'),
    oldestPendingAgeMs: ages.length === 0 ? null : Math.max(...ages),
    expiredLeases: sum('expiredLeases'),
    estimated: queues.some((q) => q.estimated),
  };
}

/** The stats as a text table: one line per queue, a total line per table with several. */
export function renderStats(report: StatsReport): string {
  const rows: (string | number)[][] = [];
  for (const { table, queues, total } of report.tables) {
    const line = (name: string, q: Omit<QueueStats, 'name'>) =>
      [table, name, q.pending, q.processing, q.estimated ? `~${q.done}` : q.done, q.dead, formatAge(q.oldestPendingAgeMs), q.expiredLeases];
    if (queues.length === 0) rows.push(line('(empty)', total));
    for (const q of queues) rows.push(line(q.name, q));
    if (queues.length > 1) rows.push(line('(all)', total));
  }
  const headers = ['TABLE', 'QUEUE', 'PENDING', 'PROCESSING', 'DONE', 'DEAD', 'OLDEST PENDING', 'EXPIRED LEASES'];
  const queues = renderTable(headers, rows, [2, 3, 4, 5, 6, 7]);
  const estimated = report.tables.some((t) => t.total.estimated);
  // a large table's done rows are sampled, not counted: say so next to the numbers
  const parts = estimated ? [queues, '~ estimated from a sample of the table (it is too large to count every finished row)'] : [queues];
  if (report.limits.length > 0) parts.push(renderLimits(report.limits));
  if (report.schedules.length > 0) parts.push(renderSchedules({ schema: report.schema, schedules: report.schedules }));
  if (report.versions !== null && versionsWorthShowing(report.versions)) parts.push(renderVersions(report.versions));
  return parts.join('\n\n');
}

/**
 * `leasehold stats`: counts by status, oldest pending age and expired leases, per queue, then the
 * limits and schedules (done rows of a large table estimated, marked `~`); with
 * `--format prometheus` the queue gauges in Prometheus' text format.
 */
export const statsCommand: CommandHandler = async (ctx) => {
  const report = await readStats(ctx.pool, await ctx.tables());
  const { json, format } = ctx.invocation;
  ctx.io.out(json ? JSON.stringify(report) : format === 'prometheus' ? renderPrometheus(report) : renderStats(report));
  return EXIT_CODES.ok;
};
