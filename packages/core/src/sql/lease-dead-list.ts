import { sql } from 'kysely';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/** The lease columns of a dead row that a person needs to decide about it. */
export interface DeadFields {
  /** Row id (a bigint, as a string): what `leaseRetryDeadMany` / `leaseSkipDeadMany` take. */
  readonly id: string;
  /** Claims it got, the last included. */
  readonly attempts: number;
  readonly maxAttempts: number;
  /** Why it died: the handler's error, "retries exhausted …", the reap message, a validation error. */
  readonly lastError: string | null;
  /** Set when it belongs to an ordered group, whose later rows it now blocks. */
  readonly groupKey: string | null;
  readonly createdAt: Date;
}

/** A dead row: {@link DeadFields} plus the table's own row (its `mapRow` of the extra columns). */
export type DeadRow<Row> = DeadFields & Row;

/** Which page of dead rows {@link leaseDeadList} returns. */
export interface DeadListPage {
  /** Most rows to return. */
  readonly limit: number;
  /** Only rows with an id above this one; null starts at the first. */
  readonly afterId: string | null;
}

const PAGE_OPTIONS = optionKeys<DeadListPage>()('leaseDeadList', ['limit', 'afterId'], {
  offset: 'pages go by id: pass the last id you got as `afterId`',
});

const DEAD_COLUMNS: readonly string[] = ['id', 'attempts', 'max_attempts', 'last_error', 'group_key', 'created_at'];

/**
 * Lists dead rows by id, `page.limit` at a time, after `page.afterId` (the design article's
 * dead-letter query), with the table's extra columns mapped by its `mapRow`. Takes no locks;
 * uses the `<table>_dead` index. A key `page` does not take is a `ConfigError`, before any SQL.
 *
 * @example
 * const dead = await leaseDeadList(pool, taskTable(), { limit: 100, afterId: null });
 * for (const task of dead) console.log(task.id, task.name, task.lastError);
 */
export async function leaseDeadList<Row>(
  executor: Executor,
  table: LeasedTable<Row>,
  page: DeadListPage,
): Promise<DeadRow<Row>[]> {
  checkOptionKeys(page, PAGE_OPTIONS);
  const columns = [...DEAD_COLUMNS, ...table.extraColumns.filter((c) => !DEAD_COLUMNS.includes(c))];
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT ${sql.join(columns.map((c) => sql.ref(c)))}
      FROM ${tableRef(table)}
      WHERE status = 'dead' AND id > ${page.afterId ?? '0'}::bigint
      ORDER BY id
      LIMIT ${page.limit}
    `,
  );
  return rows.map((raw) => ({
    ...table.mapRow(raw),
    id: String(raw.id),
    attempts: Number(raw.attempts),
    maxAttempts: Number(raw.max_attempts),
    lastError: (raw.last_error as string | null) ?? null,
    groupKey: (raw.group_key as string | null) ?? null,
    createdAt: raw.created_at as Date,
  }));
}
