import { leasePurgeFinished, type FinishedStatus } from '@leasehold/core/internal';
import type { TableName } from '../args.js';
import { EXIT_CODES } from '../exit-codes.js';
import { selectTables } from '../leased-tables.js';
import type { CommandHandler } from './context.js';

const BATCH = 1_000;
/** What a purge deletes: finished rows. Dead ones wait for a person (`leasehold dead`). */
const STATUSES: readonly FinishedStatus[] = ['done', 'cancelled'];

/**
 * `leasehold purge --older-than 7d [--table t]`: deletes finished (`done`, `cancelled`) rows
 * older than that, in batches of 1000, each its own short statement, as the workers' retention
 * does (a one-off: workers delete rows older than a week by default). Unfinished and dead rows
 * are never touched, nor a child whose parent has not ended, nor a row someone waits for that
 * ended within the hour. Ctrl-C stops between batches; what was deleted stays deleted (exit
 * code 130).
 */
export const purgeCommand: CommandHandler = async (ctx) => {
  const tables = await ctx.tables();
  const olderThanMs = ctx.invocation.olderThanMs!;
  const deleted: Partial<Record<TableName, number>> = {};
  for (const [table, leased] of selectTables(tables, ctx.invocation.table)) {
    let n = 0;
    for (const status of STATUSES) {
      let batch = BATCH;
      while (batch === BATCH && !ctx.signal.aborted) {
        batch = await leasePurgeFinished(ctx.pool, leased, status, olderThanMs, BATCH);
        n += batch;
      }
    }
    deleted[table] = n;
  }
  const total = Object.values(deleted).reduce((a, b) => a + b, 0);
  if (ctx.invocation.json) ctx.io.out(JSON.stringify({ schema: tables.schema, olderThanMs, deleted, interrupted: ctx.signal.aborted }));
  else {
    const parts = Object.entries(deleted).map(([table, n]) => `${table} ${n}`);
    ctx.io.out(`purged ${total} finished row(s) older than ${ctx.invocation.olderThanText}: ${parts.join(', ')}`);
  }
  return ctx.signal.aborted ? EXIT_CODES.interrupted : EXIT_CODES.ok;
};
