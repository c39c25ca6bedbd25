import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { bigintArray } from './bigint-array.js';
import { executeCached, type Executor } from './execute.js';
import { byPrimaryKey, fenceEach } from './fence.js';
import { compareIds } from './lease-claim.js';
import { tokenKey } from './lease-row.js';
import { tableRef } from './table-ref.js';

/** One lease to extend. */
export interface ExtendItem {
  readonly id: string;
  readonly leaseVersion: number;
  /** New lease length from the database's `now()`, in ms. */
  readonly leaseMs: number;
}

/** How {@link leaseExtendMany} treats a row another transaction holds locked. */
export interface ExtendOptions {
  /**
   * Pass over it instead of waiting, and answer it as busy (`null`) when its token still holds in
   * the statement's snapshot: the worker's heartbeat, which must never wait for a row lock. Its
   * rows are the ones the worker's own fenced writes lock, in whatever order their plans reach
   * them (a bitmap scan goes by page, not by id), so a heartbeat that waited in id order
   * deadlocked with them on a table whose rows no longer lie in id order. A busy row is being
   * written (by this worker's write, a takeover, a cancel): that write says what became of it.
   * @defaultValue false: wait, so that every token gets an answer
   */
  readonly skipLocked?: boolean;
}

/**
 * Heartbeat: extends many leases in one fenced statement (`status = 'processing' AND
 * lease_version = $version` per row). Returns the tokens that were extended (`id@version`),
 * with their new `lease_until`, and, with `skipLocked`, the busy ones with `null`; a missing
 * token lost its lease. Locks the processing rows among them (those it does not pass over), in id
 * order.
 */
export async function leaseExtendMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  items: readonly ExtendItem[],
  options: ExtendOptions = {},
): Promise<Map<string, Date | null>> {
  if (items.length === 0) return new Map();
  const skipLocked = options.skipLocked === true;
  const sorted = [...items].sort((a, b) => compareIds(a.id, b.id));
  const values = {
    ids: bigintArray(sorted.map((i) => i.id)),
    versions: bigintArray(sorted.map((i) => i.leaseVersion)),
    leaseMs: sorted.map((i) => i.leaseMs),
  };
  const rows = await executeCached<{ id: string; version: string; lease_until: Date | null }, typeof values>(
    executor,
    `leaseExtendMany:${table.schema}.${table.table}:${skipLocked ? 'skip' : 'wait'}`,
    (v) => extendStatement(table, skipLocked, v),
    values,
    // planned per call: its best plan depends on how many rows the arrays hold
    { prepare: false },
  );
  return new Map(rows.map((r) => [tokenKey({ id: r.id, leaseVersion: r.version }), r.lease_until]));
}

// Interpolates `v` only (see executeCached). Every row is reached by its primary key (see
// byPrimaryKey): planned on the partial index of processing rows, with statistics taken while
// those rows were still pending, extending 2,000 leases among 51,000 in flight compared every
// processing row with every lease, 47 s instead of some 40 ms.
function extendStatement(
  table: LeasedTable<unknown>,
  skipLocked: boolean,
  v: { readonly ids: unknown; readonly versions: unknown; readonly leaseMs: readonly number[] },
): RawBuilder<{ id: string; version: string; lease_until: Date | null }> {
  const t = tableRef(table);
  // in id order, like a finalize that locks a child's parent, lower in id, before the child
  const head = sql`
      WITH f AS (
        SELECT * FROM unnest(${v.ids}::bigint[], ${v.versions}::bigint[], ${v.leaseMs}::float8[]) AS f(id, version, lease_ms)
      ), locked AS (
        SELECT l.id FROM ${t} AS l WHERE ${byPrimaryKey('l', 'f', 'processing')}
        ORDER BY l.id FOR NO KEY UPDATE${skipLocked ? sql` SKIP LOCKED` : sql``}
      )`;
  const extend = sql`
      UPDATE ${t} AS t
      SET lease_until = now() + f.lease_ms * interval '1 millisecond'
      FROM f
      WHERE ${fenceEach('t', 'f', 'locked')}
      RETURNING t.id, f.version, t.lease_until`;
  if (!skipLocked) return sql`${head}${extend}`;
  return sql`${head}, extended AS (${extend}
      ), passed AS (
        -- not locked: held by another transaction, or no longer processing (few, either way)
        SELECT f.id, f.version FROM f WHERE NOT EXISTS (SELECT 1 FROM locked AS k WHERE k.id = f.id)
      )
      SELECT id, version, lease_until FROM extended
      UNION ALL
      -- busy: passed over for another transaction's lock, its token still holding in this snapshot
      SELECT b.id, p.version, NULL FROM ${t} AS b JOIN passed AS p ON p.id = b.id
      WHERE ${byPrimaryKey('b', 'passed', 'processing')} AND b.lease_version = p.version
    `;
}
