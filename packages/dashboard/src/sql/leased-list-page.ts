import type { Executor, LeasedTable, TaskStatus } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
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
 * ordered by the primary key backwards, or by `<table>_dead` for dead rows. The status goes into
 * the statement as a literal so the planner can match the partial indexes; name and group key are
 * parameters. Takes no locks.
 *
 * @example
 * const page = await leasedListPage(pool, taskTable(), { status: 'dead', name: null, groupKey: null }, { below: '1000001', floor: '1', limit: 50 });
 */
export async function leasedListPage(executor: Executor, table: LeasedTable<unknown>, filter: ListFilter, range: ListRange): Promise<ListPage> {
  const below = BigInt(range.below);
  const floor = BigInt(range.floor);
  const windowed = filter.status === null ? filter.name !== null || filter.groupKey !== null : !INDEXED.has(filter.status);
  const low = windowed && below - SCAN_WINDOW > floor ? below - SCAN_WINDOW : floor;
  const raw = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT id, ${sql.ref(table.nameColumn)} AS name, status, attempts, max_attempts, group_key, blocked,
             created_at, available_at, lease_owner, lease_until, left(last_error, 300) AS last_error
      FROM ${tableRef(table)}
      WHERE id < ${String(below)}::bigint AND id >= ${String(low)}::bigint ${conditions(table, filter)}
      ORDER BY id DESC
      LIMIT ${range.limit + 1}
    `,
  );
  const rows = raw.slice(0, range.limit).map(toListRow);
  const full = raw.length > range.limit;
  const next = full ? rows.at(-1)!.id : low > floor ? String(low) : null;
  return { rows, next, scannedFrom: String(low) };
}

function conditions(table: LeasedTable<unknown>, filter: ListFilter): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [];
  // a literal, from TASK_STATUSES (checked by the caller's parser), so the partial indexes match
  if (filter.status !== null) parts.push(sql`AND status = ${sql.lit(filter.status)}`);
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
