import { taskTable, type LeasedTable, type TaskRow } from '@leasehold/core';
import { createOutbox, type Outbox } from '@leasehold/outbox';
import type { TableName } from './args.js';
import { CommandError } from './errors.js';
import type { SchemaTables } from './sql/schema-tables.js';

/** The leased tables of one schema that exist, in display order (`task`, then `outbox`). */
export interface LeasedTables {
  readonly schema: string;
  readonly task: LeasedTable<TaskRow> | undefined;
  /** The outbox's own operations (dead, retryDead, skipDead, purgeDone), when the table exists. */
  readonly outbox: Outbox | undefined;
  /** `[name, table]` of each existing table. */
  readonly list: ReadonlyArray<readonly [TableName, LeasedTable<unknown>]>;
}

/**
 * Resolves the tables of `schema`; throws {@link CommandError} when the schema holds none, since
 * then every command would fail later with "relation does not exist".
 */
export function leasedTables(schema: string, present: SchemaTables, database: string): LeasedTables {
  if (!present.task && !present.outbox) {
    const what = present.schemaExists ? `schema "${schema}" has no leasehold tables` : `schema "${schema}" does not exist`;
    throw new CommandError(
      `${what} in database "${database}": run "leasehold migrate" first (or pass --schema <name> if your tables live elsewhere)`,
    );
  }
  const task = present.task ? taskTable(schema) : undefined;
  const outbox = present.outbox ? createOutbox({ schema }) : undefined;
  const list: [TableName, LeasedTable<unknown>][] = [];
  if (task) list.push(['task', task]);
  if (outbox) list.push(['outbox', outbox.table as LeasedTable<unknown>]);
  return { schema, task, outbox, list };
}

/** The tables a command acts on: the one named by `--table`, else all. */
export function selectTables(tables: LeasedTables, only: TableName | undefined): LeasedTables['list'] {
  if (only === undefined) return tables.list;
  const found = tables.list.filter(([name]) => name === only);
  if (found.length === 0) throw new CommandError(`schema "${tables.schema}" has no ${only} table`);
  return found;
}
