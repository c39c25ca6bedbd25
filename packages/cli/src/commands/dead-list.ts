import { leaseDeadList, NON_DETERMINISM_ERROR_PREFIX } from '@leasehold/core';
import type { TableName } from '../args.js';
import { EXIT_CODES } from '../exit-codes.js';
import { renderTable } from '../format/table.js';
import { selectTables, type LeasedTables } from '../leased-tables.js';
import type { CommandContext, CommandHandler } from './context.js';

/** One dead row as `leasehold dead list` shows it, from either table. */
export interface DeadRow {
  /** `task:12` / `outbox:7`: what `dead retry` and `dead skip` take. */
  readonly ref: string;
  readonly table: TableName;
  readonly id: string;
  /** Task name or event type. */
  readonly name: string;
  readonly attempts: number;
  readonly lastError: string | null;
  /** Ordered group it blocks (task group key, or the outbox's `aggregate_type:aggregate_id`). */
  readonly groupKey: string | null;
  readonly createdAt: string;
  readonly payload: unknown;
}

/** `leasehold dead list [--table t] [--limit n]`: dead rows by id, oldest first. */
export const deadListCommand: CommandHandler = async (ctx) => {
  const tables = await ctx.tables();
  const limit = ctx.invocation.limit;
  const dead: DeadRow[] = [];
  const truncated: TableName[] = [];
  for (const [table] of selectTables(tables, ctx.invocation.table)) {
    // one more than asked, to know whether there are more
    const rows = await readDead(ctx, tables, table, limit + 1);
    if (rows.length > limit) truncated.push(table);
    dead.push(...rows.slice(0, limit));
  }
  if (ctx.invocation.json) {
    ctx.io.out(JSON.stringify({ schema: tables.schema, dead, truncated }));
    return EXIT_CODES.ok;
  }
  if (dead.length === 0) ctx.io.out(`no dead rows in schema "${tables.schema}"`);
  else ctx.io.out(render(dead, ctx.io.columns));
  const replay = dead.filter((d) => d.lastError?.startsWith(NON_DETERMINISM_ERROR_PREFIX)).length;
  if (replay > 0) {
    // their steps are kept: what fixes them is a deploy, then a retry, not a retry alone
    ctx.io.out(`\n${replay} of these failed replay (NonDeterminismError): the code no longer matches what the run recorded. Deploy code that can run them, then "leasehold dead retry <ids>" resumes them with their recorded steps.`);
  }
  for (const table of truncated) ctx.io.err(`(showing the first ${limit} dead rows of ${table}; raise --limit to see more)`);
  return EXIT_CODES.ok;
};

async function readDead(ctx: CommandContext, tables: LeasedTables, table: TableName, limit: number): Promise<DeadRow[]> {
  if (table === 'task') {
    const rows = await leaseDeadList(ctx.pool, tables.task!, { limit, afterId: null });
    return rows.map((r) => ({
      ref: `task:${r.id}`, table, id: r.id, name: r.name, attempts: r.attempts, lastError: r.lastError,
      groupKey: r.groupKey, createdAt: r.createdAt.toISOString(), payload: r.payload,
    }));
  }
  const rows = await tables.outbox!.dead(ctx.pool, { limit });
  return rows.map((r) => ({
    ref: `outbox:${r.id}`, table, id: r.id, name: r.eventType, attempts: r.attempts, lastError: r.lastError,
    groupKey: r.groupKey, createdAt: r.createdAt.toISOString(), payload: r.payload,
  }));
}

function render(dead: readonly DeadRow[], columns: number): string {
  const rows = dead.map((d) => [d.ref, d.name, d.attempts, d.groupKey ?? '—', d.createdAt.slice(0, 19).replace('T', ' '), d.lastError ?? '']);
  const fixed = renderTable(['ID', 'NAME', 'ATTEMPTS', 'BLOCKS GROUP', 'CREATED (UTC)'], rows.map((r) => r.slice(0, 5)));
  const used = Math.max(...fixed.split('\n').map((l) => l.length)) + 2;
  const room = Math.max(40, columns - used);
  const cut = rows.map((r) => [...r.slice(0, 5), firstLine(String(r[5]), room)]);
  return renderTable(['ID', 'NAME', 'ATTEMPTS', 'BLOCKS GROUP', 'CREATED (UTC)', 'LAST ERROR'], cut);
}

function firstLine(text: string, room: number): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > room ? `${line.slice(0, room - 1)}…` : line;
}
