import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { groupTableRef, tableRef } from './table-ref.js';
import { wakeLockCte } from './wake-sleepers.js';

/**
 * Serialises every writer of the given ordering groups until the caller's transaction ends:
 * upserts each group's row in `<table>_group` (creating it for a new group), which row-locks it.
 * Producers call it before inserting rows of those groups, so that id order equals commit order
 * inside a group; finishers (a fenced finalize to done, a skip) call it before they change a
 * group's head. Then {@link leaseSettleGroups} picks heads under the same locks.
 *
 * Also takes the table's wake lock, shared, until the transaction ends (core migration 5): a
 * finisher that makes a head claimable and skips its NOTIFY (no worker asleep) keeps a worker
 * from falling asleep before it commits.
 *
 * Locks: one row per group, taken in one global order (byte order of the key), so writers of
 * overlapping groups cannot deadlock on them. Row locks live in the rows themselves, not in the
 * server's shared lock table: 100,000 groups in one transaction cost 100,000 small writes and
 * no lock-table slots. Must run inside a transaction (see `inTransaction`); in REPEATABLE READ or
 * SERIALIZABLE, a group changed by a writer that committed after the transaction's snapshot
 * fails with a serialization error (40001) instead of acting on stale rows — retry it.
 *
 * @example
 * await inTransaction(pool, async (trx) => {
 *   await leaseLockGroups(trx, table, ['order:42']);
 *   // insert rows of group order:42 (blocked), then leaseSettleGroups(trx, table, ['order:42'])
 * });
 */
export async function leaseLockGroups(executor: Executor, table: LeasedTable<unknown>, groups: readonly string[]): Promise<void> {
  const keys = [...new Set(groups)];
  if (keys.length === 0) return;
  await upsertGroups(executor, table, sql`SELECT k FROM unnest(${keys}::text[]) AS u(k)`);
}

/**
 * {@link leaseLockGroups} for the groups of existing rows, by id (rows without a group are
 * ignored). Returns the keys it locked.
 */
export async function leaseLockGroupsOfRows(executor: Executor, table: LeasedTable<unknown>, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await upsertGroups(
    executor,
    table,
    // a row's group_key never changes, so reading it from this statement's snapshot is safe
    sql`SELECT DISTINCT r.group_key AS k FROM ${tableRef(table)} AS r
        WHERE r.id = ANY(${[...ids]}::bigint[]) AND r.group_key IS NOT NULL`,
  );
  return rows.map((r) => r.group_key);
}

/**
 * {@link leaseLockGroups} for finishers, whose groups exist (a group keeps its row while it has
 * an unfinished row, and the finishing row is one): locks the rows `FOR NO KEY UPDATE`, in the
 * same global order, instead of upserting them. A lock writes no new row version, where the
 * upsert wrote one per group and finish (a third of an ordered outbox message's statements' time
 * was these locks and the group settles; the versions also bloat the group table). The settle
 * that follows still writes every group whose head finished, so a REPEATABLE READ writer that
 * read such a group before this commits still fails. A group without its row (none should be)
 * falls back to the upsert of all the keys.
 *
 * Returns each group's row as it locked it (for `leaseSettleGroups`, which then need not look the
 * rows up again), or undefined after the fallback.
 */
export async function leaseLockFinishingGroups(
  executor: Executor,
  table: LeasedTable<unknown>,
  groups: readonly string[],
): Promise<LockedGroup[] | undefined> {
  const keys = [...new Set(groups)];
  if (keys.length === 0) return [];
  const locked = await execute<{ group_key: string; row_id: string; head_id: string | null; first_id: string | null }>(
    executor,
    sql`
      WITH ${wakeLockCte(table)}
      SELECT g.group_key, g.ctid::text AS row_id, g.head_id::text AS head_id, g.first_id::text AS first_id FROM ${groupTableRef(table)} AS g CROSS JOIN wake
      WHERE g.group_key = ANY(${keys}::text[])
      ORDER BY g.group_key COLLATE "C"
      FOR NO KEY UPDATE OF g
    `,
    { prepare: false },
  );
  if (locked.length < keys.length) {
    await leaseLockGroups(executor, table, keys);
    return undefined;
  }
  return locked.map((r) => ({ key: r.group_key, rowId: r.row_id, headId: r.head_id, firstId: r.first_id }));
}

/**
 * A group's row as {@link leaseLockFinishingGroups} locked it. The lock returns the row's latest
 * version; while the transaction holds the lock nobody else writes the row, so until the settle
 * writes it, this is where the row lies and who its head is.
 * @internal
 */
export interface LockedGroup {
  readonly key: string;
  /** The locked version's `ctid`. */
  readonly rowId: string;
  readonly headId: string | null;
  /** The group's first head since its row was made (core migration 23); null when not known. */
  readonly firstId: string | null;
}

// `keys` is a query yielding distinct group keys as column k
async function upsertGroups(executor: Executor, table: LeasedTable<unknown>, keys: RawBuilder<unknown>) {
  return execute<{ group_key: string }>(
    executor,
    sql`
      WITH ${wakeLockCte(table)}
      INSERT INTO ${groupTableRef(table)} AS g (group_key)
      SELECT k FROM (${keys}) AS keys CROSS JOIN wake ORDER BY k COLLATE "C"
      ON CONFLICT (group_key) DO UPDATE SET updated_at = now()
      RETURNING g.group_key
    `,
    // planned per call: the key list's length varies from 1 to 100,000
    { prepare: false },
  );
}
