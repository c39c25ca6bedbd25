import { userInfo } from 'node:os';
import {
  leaseRetryDeadMany,
  leaseSkipDeadMany,
  withTransaction,
  type Executor,
  type LeasedTable,
  type TaskStatus,
} from '@leasehold/core';
import type { TableName } from '../args.js';
import { CommandError } from '../errors.js';
import { EXIT_CODES } from '../exit-codes.js';
import { formatRowRef, parseRowRefs, type RowRef } from '../format/ids.js';
import { selectTables, type LeasedTables } from '../leased-tables.js';
import { deadIds } from '../sql/dead-ids.js';
import type { CommandContext, CommandHandler } from './context.js';

type Action = 'retry' | 'skip';

interface Rejected {
  readonly ref: RowRef;
  /** null: no such row; otherwise the row is not dead. */
  readonly status: TaskStatus | null;
}

/** Thrown inside the transaction to roll it back: some ids could not be resolved. */
class NothingChanged extends Error {
  constructor(readonly rejected: readonly Rejected[]) {
    super('some ids are not dead');
  }
}

// ids per statement, so one array parameter stays small; also the page `--all` reads at a time
const CHUNK = 10_000;

/** A table's ids to resolve, CHUNK at a time. */
type IdChunks = (table: TableName, leased: LeasedTable<unknown>) => AsyncIterable<readonly string[]>;

/**
 * `leasehold dead retry <ids|--all>` and `leasehold dead skip <ids>`. All or nothing: when any
 * id is unknown or not dead, the transaction rolls back, nothing changes, and the exit code is 1.
 */
export function deadResolveCommand(action: Action): CommandHandler {
  return async (ctx) => {
    const tables = await ctx.tables();
    const selected = selectTables(tables, ctx.invocation.table).map(([name]) => name);
    const typed = ctx.invocation.all ? undefined : parseRowRefs(ctx.invocation.ids, ctx.invocation.table, selected);
    for (const ref of typed ?? []) {
      if (!selected.includes(ref.table)) throw new CommandError(`schema "${tables.schema}" has no ${ref.table} table (${formatRowRef(ref)})`);
    }
    const reason = ctx.invocation.reason ?? `${userInfo().username} with the leasehold CLI`;
    try {
      const changed = await withTransaction(ctx.pool, async (trx) => {
        const chunks = typed === undefined ? deadChunks(trx as Executor, selected) : typedChunks(typed);
        return resolve(trx as Executor, tables, action, chunks, reason);
      });
      report(ctx, action, changed, []);
      return EXIT_CODES.ok;
    } catch (error) {
      if (error instanceof NothingChanged) {
        report(ctx, action, [], error.rejected);
        return EXIT_CODES.failure;
      }
      throw explainConflict(error);
    }
  };
}

/** The ids a person typed, per table. */
function typedChunks(refs: readonly RowRef[]): IdChunks {
  return async function* (table) {
    const ids = refs.filter((r) => r.table === table).map((r) => r.id);
    for (let i = 0; i < ids.length; i += CHUNK) yield ids.slice(i, i + CHUNK);
  };
}

/**
 * Every dead row of the selected tables, read a page at a time in the command's transaction, each
 * page resolved before the next is read: reading them all first held every id twice over, and
 * spreading 150,000 of them into one push() overflowed the call stack, so `--all` failed just when
 * an outage had killed the most rows. The pages go by id, so a row resolved here is never met again.
 */
function deadChunks(trx: Executor, selected: readonly TableName[]): IdChunks {
  return async function* (table, leased) {
    if (!selected.includes(table)) return;
    let afterId: string | null = null;
    for (;;) {
      const ids = await deadIds(trx, leased, { afterId, limit: CHUNK });
      if (ids.length > 0) yield ids;
      if (ids.length < CHUNK) return;
      afterId = ids[ids.length - 1]!;
    }
  };
}

async function resolve(trx: Executor, tables: LeasedTables, action: Action, chunks: IdChunks, reason: string): Promise<RowRef[]> {
  const changed: RowRef[] = [];
  const rejected: Rejected[] = [];
  // core's dead-letter statements, alike on both tables: the reason goes to the row's resolution column
  const statement = action === 'retry' ? leaseRetryDeadMany : leaseSkipDeadMany;
  for (const [table, leased] of tables.list) {
    for await (const ids of chunks(table, leased)) {
      const result = await statement(trx, leased, ids, reason);
      // one push per row: the rows of every chunk together can be too many to spread as arguments
      for (const id of result.changed) changed.push({ table, id });
      for (const r of result.rejected) rejected.push({ ref: { table, id: r.id }, status: r.status });
    }
  }
  if (rejected.length > 0) throw new NothingChanged(rejected);
  return changed;
}

function report(ctx: CommandContext, action: Action, changed: readonly RowRef[], rejected: readonly Rejected[]): void {
  const verb = action === 'retry' ? 'retried' : 'skipped';
  if (ctx.invocation.json) {
    ctx.io.out(JSON.stringify({
      action,
      changed: changed.map(formatRowRef),
      rejected: rejected.map((r) => ({ ref: formatRowRef(r.ref), status: r.status })),
    }));
  } else if (rejected.length === 0) {
    ctx.io.out(changed.length === 0 ? `no dead rows to ${action}` : `${verb} ${changed.length} dead row(s): ${changed.map(formatRowRef).join(', ')}`);
  }
  if (rejected.length > 0) {
    const why = rejected.map((r) => `${formatRowRef(r.ref)} ${r.status === null ? 'does not exist' : `is not dead (it is ${r.status})`}`);
    ctx.io.err(`leasehold: nothing was ${verb}: ${why.join('; ')}`);
  }
}

// retrying a dead task whose dedup key is live again would break the one-live-task-per-key rule
function explainConflict(error: unknown): unknown {
  const e = error as { code?: string; constraint?: string; detail?: string };
  if (e.code === '23505' && e.constraint?.endsWith('_dedup')) {
    return new CommandError(`nothing was retried: a live task with the same dedup key already exists (${e.detail ?? 'duplicate key'})`);
  }
  return error;
}
