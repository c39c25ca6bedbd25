import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/** One checked row for {@link taskInsertMany}. */
export interface TaskInsert {
  readonly name: string;
  /** Already JSON text. */
  readonly payloadJson: string;
  readonly priority: number;
  readonly groupKey: string | null;
  readonly dedupKey: string | null;
  readonly maxAttempts: number;
  /** Absolute run-at time, or null for `now() + delayMs`. */
  readonly runAt: Date | null;
  readonly delayMs: number;
}

/** Id of each inserted (or, for a live dedup key, existing) task, in input order. */
export interface InsertedTask {
  readonly id: string;
  /** False when a live task with the same name and dedup key was returned instead. */
  readonly inserted: boolean;
}

/**
 * Inserts many tasks in one statement. A row whose `(name, dedup_key)` is already live
 * (pending or processing) is not inserted; the live task is returned instead. The conflict
 * is resolved by the unique index, so concurrent enqueues of one key are race-free: the loser
 * waits for the winner's transaction and then sees its row. Callers must not repeat a
 * `(name, dedup_key)` inside one call (PostgreSQL refuses to touch a row twice).
 */
export async function taskInsertMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  rows: readonly TaskInsert[],
): Promise<InsertedTask[]> {
  if (rows.length === 0) return [];
  const groups = [...new Set(rows.flatMap((r) => (r.groupKey === null ? [] : [r.groupKey])))].sort();
  // Producers of one group are serialised until commit (a transaction-scoped advisory lock per
  // group, in sorted order), so that id order equals commit order inside a group. The locks are
  // taken before any row (and so any id) is produced: the join below needs their count first.
  const locks =
    groups.length === 0
      ? sql``
      : sql`CROSS JOIN (SELECT count(pg_advisory_xact_lock(hashtextextended(${`leasehold:${table.schema}.${table.table}:`} || g, 0)))
                        FROM unnest(${groups}::text[]) WITH ORDINALITY AS l(g, n)) AS locked`;
  const result = await execute<{ id: string; inserted: boolean }>(
    executor,
    sql`
      INSERT INTO ${tableRef(table)} AS t
        (name, payload, priority, group_key, dedup_key, max_attempts, available_at)
      SELECT u.name, u.payload, u.priority, u.group_key, u.dedup_key, u.max_attempts,
             coalesce(u.run_at, now() + u.delay_ms * interval '1 millisecond')
      FROM unnest(${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.payloadJson)}::jsonb[],
                  ${rows.map((r) => r.priority)}::int[], ${rows.map((r) => r.groupKey)}::text[],
                  ${rows.map((r) => r.dedupKey)}::text[], ${rows.map((r) => r.maxAttempts)}::int[],
                  ${rows.map((r) => r.runAt)}::timestamptz[], ${rows.map((r) => r.delayMs)}::float8[])
           AS u(name, payload, priority, group_key, dedup_key, max_attempts, run_at, delay_ms)
      ${locks}
      ON CONFLICT (name, dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('pending', 'processing')
      -- a no-op update, so RETURNING also yields the live row that won the key
      DO UPDATE SET dedup_key = EXCLUDED.dedup_key
      RETURNING t.id, (xmax = 0) AS inserted
    `,
  );
  // INSERT … SELECT returns rows in the order it inserted them, which is input order
  return result.map((r) => ({ id: String(r.id), inserted: r.inserted }));
}
