import { TABLE_NAMES, type TableName } from '../args.js';
import { UsageError } from '../errors.js';

/** A row id with the table it belongs to; written `task:12` or `outbox:7`. */
export interface RowRef {
  readonly table: TableName;
  readonly id: string;
}

const ID = /^[1-9][0-9]{0,18}$/;

/**
 * Parses ids as typed: `task:12`, `outbox:7`, or a bare `12` (which belongs to `--table`, or to
 * the only table there is), each argument possibly a comma-separated list. A bare id is refused
 * when it could mean either table: retrying the wrong message is worse than asking.
 */
export function parseRowRefs(args: readonly string[], defaultTable: TableName | undefined, tables: readonly TableName[]): RowRef[] {
  const refs: RowRef[] = [];
  for (const text of args.flatMap((arg) => arg.split(',')).map((s) => s.trim()).filter((s) => s !== '')) {
    const colon = text.indexOf(':');
    const table = colon < 0 ? (defaultTable ?? (tables.length === 1 ? tables[0] : undefined)) : text.slice(0, colon);
    const id = colon < 0 ? text : text.slice(colon + 1);
    if (table === undefined) {
      throw new UsageError(`id "${text}" could be a task or an outbox message: write task:${text} or outbox:${text}, or pass --table`);
    }
    if (!(TABLE_NAMES as readonly string[]).includes(table)) throw new UsageError(`unknown table in "${text}" (use task:<id> or outbox:<id>)`);
    if (!ID.test(id)) throw new UsageError(`"${text}" is not an id (ids are positive whole numbers, e.g. task:12)`);
    if (defaultTable !== undefined && table !== defaultTable) throw new UsageError(`"${text}" is not in --table ${defaultTable}`);
    refs.push({ table: table as TableName, id });
  }
  if (refs.length === 0) throw new UsageError('no ids given');
  return refs;
}

/** `task:12` */
export function formatRowRef(ref: RowRef): string {
  return `${ref.table}:${ref.id}`;
}

/**
 * Parses the one task id of `cancel` and `task show`: `12` or `task:12` (how `dead list` and
 * `task show` print them, so either can be pasted back).
 */
export function parseTaskId(text: string): string {
  const id = text.startsWith('task:') ? text.slice('task:'.length) : text;
  if (!ID.test(id)) throw new UsageError(`"${text}" is not a task id (a positive whole number, e.g. 12 or task:12)`);
  return id;
}
