import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { fence } from './fence.js';
import { tableRef } from './table-ref.js';
import { tokenKey } from './lease-row.js';

/** One lease to extend. */
export interface ExtendItem {
  readonly id: string;
  readonly leaseVersion: number;
  /** New lease length from the database's `now()`, in ms. */
  readonly leaseMs: number;
}

/**
 * Heartbeat: extends many leases in one fenced statement (`status = 'processing' AND
 * lease_version = $version` per row). Returns the tokens that were extended (`id@version`),
 * with their new `lease_until`; a missing token lost its lease. Locks the processing rows among
 * them, in id order.
 */
export async function leaseExtendMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  items: readonly ExtendItem[],
): Promise<Map<string, Date>> {
  if (items.length === 0) return new Map();
  const t = tableRef(table);
  const rows = await execute<{ id: string; version: string; lease_until: Date }>(
    executor,
    sql`
      WITH f AS (
        SELECT * FROM unnest(${items.map((i) => i.id)}::bigint[], ${items.map((i) => i.leaseVersion)}::bigint[],
                             ${items.map((i) => i.leaseMs)}::float8[]) AS f(id, version, lease_ms)
      ), locked AS (
        -- in id order, like every writer that locks several task rows (a finalize locks a child's
        -- parent, lower in id, before the child): two of them never wait for each other in a cycle
        SELECT l.id FROM ${t} AS l WHERE l.id IN (SELECT id FROM f) AND l.status = 'processing'
        ORDER BY l.id FOR NO KEY UPDATE
      )
      UPDATE ${t} AS t
      SET lease_until = now() + f.lease_ms * interval '1 millisecond'
      FROM f
      WHERE t.id IN (SELECT id FROM locked) AND ${fence('t', sql.ref('f.id'), sql.ref('f.version'))}
      RETURNING t.id, f.version, t.lease_until
    `,
    // planned per call: its best plan depends on how many rows the arrays hold
    { prepare: false },
  );
  return new Map(rows.map((r) => [tokenKey({ id: r.id, leaseVersion: r.version }), r.lease_until]));
}
