import { leasePurgeDone } from '@leasehold/core';
import type { TableName } from '../args.js';
import { EXIT_CODES } from '../exit-codes.js';
import { selectTables } from '../leased-tables.js';
import type { CommandHandler } from './context.js';

const BATCH = 1_000;

/**
 * `leasehold purge --older-than 7d [--table t]`: deletes finished (`done`) rows older than
 * that, in batches of 1000, each its own short statement. Unfinished and dead rows are never
 * touched. Ctrl-C stops between batches; what was deleted stays deleted (exit code 130).
 */
export const purgeCommand: CommandHandler = async (ctx) => {
  const tables = await ctx.tables();
  const olderThanMs = ctx.invocation.olderThanMs!;
  const deleted: Partial<Record<TableName, number>> = {};
  for (const [table, leased] of selectTables(tables, ctx.invocation.table)) {
    if (table === 'outbox') {
      deleted.outbox = (await tables.outbox!.purgeDone(ctx.pool, { olderThan: olderThanMs, batchSize: BATCH, signal: ctx.signal })).deleted;
    } else {
      let n = 0;
      let batch = BATCH;
      while (batch === BATCH && !ctx.signal.aborted) {
        batch = await leasePurgeDone(ctx.pool, leased, olderThanMs, BATCH);
        n += batch;
      }
      deleted.task = n;
    }
  }
  const total = Object.values(deleted).reduce((a, b) => a + b, 0);
  if (ctx.invocation.json) ctx.io.out(JSON.stringify({ schema: tables.schema, olderThanMs, deleted, interrupted: ctx.signal.aborted }));
  else {
    const parts = Object.entries(deleted).map(([table, n]) => `${table} ${n}`);
    ctx.io.out(`purged ${total} done row(s) older than ${ctx.invocation.olderThanText}: ${parts.join(', ')}`);
  }
  return ctx.signal.aborted ? EXIT_CODES.interrupted : EXIT_CODES.ok;
};
