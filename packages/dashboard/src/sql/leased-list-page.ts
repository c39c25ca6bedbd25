import type { Executor, LeasedTable, TaskStatus } from '@leasehold/core';
import { execute, statusIs } from '@leasehold/core/internal';
import { sql, type RawBuilder } from 'kysely';
import { tableRef } from './table-ref.js';

/** What a list shows; each field null means "any". */
export interface ListFilter {
  readonly status: TaskStatus | null;
  /** Task name (`task`) or event type (`outbox`). */
  readonly name: string | null;
  readonly groupKey: string | null;
}

/** Which ids one page may look at: `[floor, below)`, newest first. */
export interface ListRange {
  /** Exclusive upper id: the previous page's last id, or the highest id + 1. */
  readonly below: string;
  /** Inclusive lower id: the table's lowest id, or a time bound's. */
  readonly floor: string;
  readonly limit: number;
}

/** One row of a list. */
export interface ListRow {
  readonly id: string;
  readonly name: string;
  readonly status: TaskStatus;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly groupKey: string | null;
  readonly blocked: boolean;
  readonly createdAt: Date;
  readonly availableAt: Date;
  readonly leaseOwner: string | null;
  readonly leaseUntil: Date | null;
  /** The first 300 characters of the last error. */
  readonly lastError: string | null;
}

/** A page of {@link leasedListPage}. */
export interface ListPage {
  readonly rows: ListRow[];
  /** Where the next (older) page starts, as its `below`; null at the end. */
  readonly next: string | null;
  /** The ids this page looked at, `[scannedFrom, below)`: a filtered page may hold fewer rows than `limit`. */
  readonly scannedFrom: string;
}

/**
 * Ids one page reads at most when no index serves its filter. Without an index on the name or
 * group key, a rare name would otherwise be looked for through the whole table; a window keeps
 * every page to one bounded primary-key range (measured: under 20 ms for 100,000 ids), and the
 * page links on below it when it found fewer rows than it shows.
 */
export const SCAN_WINDOW = 100_000n;

// statuses with a partial index of their own (task_dead (id); task_leased): few rows, no window needed
const INDEXED: ReadonlySet<TaskStatus> = new Set(['dead', 'processing']);

/**
 * One page of a leased table, newest first, keyset on `id` (never OFFSET): `WHERE id < below`,
 * ordered by the primary key backwards, or by `<table>_dead` for dead rows. How each status is
 * reached, whatever the table's statistics say:
 * - dead: a literal, so the planner walks `<table>_dead` (id) backwards;
 * - processing: the candidates are the rows of `<table>_leased`, read whole (a materialised CTE,
 *   so the page's `ORDER BY id … LIMIT` cannot turn it into a walk of the primary key), and the
 *   page's rows are then reached by primary key. Walked backwards along the primary key instead,
 *   a page that found fewer than `limit` processing rows (the last one, or any below the newest
 *   leases) read every older row of the table, a million finished ones included. Its cost follows
 *   the rows in flight, which the fleet's concurrency bounds, not the table's history;
 * - any other: within the window, compared by core's `statusIs`, so the planner cannot take
 *   `<table>_done_at` for it: with statistics that said done rows were rare, a page of done rows
 *   read every done row of the table.
 * Name and group key are parameters. Takes no locks.
 *
 * @example
 * const page = await leasedListPage(pool, taskTable(), { status: 'dead', name: null, groupKey: null }, { below: '1000001', floor: '1', limit: 50 });
 */
export async function leasedListPage(executor: Executor, table: LeasedTable<unknown>, filter: ListFilter, range: ListRange): Promise<ListPage> {
  const below = BigInt(range.below);
  const floor = BigInt(range.floor);
  const windowed = filter.status === null ? filter.name !== null || filter.groupKey !== null : !INDEXED.has(filter.status);
  const low = windowed && below - SCAN_WINDOW > floor ? below - SCAN_WINDOW : floor;
  const t = tableRef(table);
  const inRange = sql`id < ${String(below)}::bigint AND id >= ${String(low)}::bigint ${conditions(table, filter)}`;
  const raw = await execute<Record<string, unknown>>(
    executor,
    filter.status === 'processing'
      ? sql`
          WITH candidates AS MATERIALIZED (SELECT id FROM ${t} WHERE ${inRange})
          SELECT ${listColumns(table)}
          FROM ${t}
          WHERE id = ANY(ARRAY(SELECT id FROM candidates ORDER BY id DESC LIMIT ${range.limit + 1}))
          ORDER BY id DESC
        `
      : sql`
          SELECT ${listColumns(table)}
          FROM ${t}
          WHERE ${inRange}
          ORDER BY id DESC
          LIMIT ${range.limit + 1}
        `,
  );
  const rows = raw.slice(0, range.limit).map(toListRow);
  const full = raw.length > range.limit;
  const next = full ? rows.at(-1)!.id : low > floor ? String(low) : null;
  return { rows, next, scannedFrom: String(low) };
}

/** The columns of a list row, as {@link toListRow} reads them. */
export function listColumns(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql`id, ${sql.ref(table.nameColumn)} AS name, status, attempts, max_attempts, group_key, blocked,
             created_at, available_at, lease_owner, lease_until, left(last_error, 300) AS last_error`;
}

function conditions(table: LeasedTable<unknown>, filter: ListFilter): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [];
  // a literal, from TASK_STATUSES (checked by the caller's parser): for dead and processing rows,
  // so their partial indexes match; for the rest under "C", so none does (the window bounds them)
  if (filter.status !== null) {
    parts.push(INDEXED.has(filter.status) ? sql`AND status = ${sql.lit(filter.status)}` : sql`AND ${statusIs(null, filter.status)}`);
  }
  if (filter.name !== null) parts.push(sql`AND ${sql.ref(table.nameColumn)} = ${filter.name}`);
  if (filter.groupKey !== null) parts.push(sql`AND group_key = ${filter.groupKey}`);
  return sql.join(parts, sql` `);
}

/** Maps a raw row of the list statements (this one and the group rows). */
export function toListRow(r: Record<string, unknown>): ListRow {
  return {
    id: String(r.id),
    name: r.name as string,
    status: r.status as TaskStatus,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    groupKey: (r.group_key as string | null) ?? null,
    blocked: r.blocked === true,
    createdAt: r.created_at as Date,
    availableAt: r.available_at as Date,
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseUntil: (r.lease_until as Date | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
  };
}
