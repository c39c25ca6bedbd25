import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { leaseLockGroupsOfRows } from './lease-lock-groups.js';
import { leaseSettleGroups } from './lease-settle-groups.js';
import { tableRef } from './table-ref.js';
import { inTransaction } from './transaction.js';

/** What {@link taskCancelTree} did. */
export interface CancelOutcome {
  /** False: no task has the id. */
  readonly found: boolean;
  /** The ids moved to `cancelled`: the task (unless it had ended already), then its descendants. */
  readonly cancelled: string[];
}

/**
 * Cancels a task and every unfinished descendant (children spawned by it, theirs, …) in one
 * transaction (the caller's when `executor` is one): each pending, processing, waiting or dead
 * row becomes `cancelled`, its lease cleared (a running handler's next fenced write is refused;
 * its heartbeat learns it was cancelled). An ordered group whose head was cancelled hands its
 * head to the next row, under the group's lock. Ended rows (done, cancelled) stay as they are.
 * Locks the tree's unfinished rows in id order (after their groups' rows).
 */
export async function taskCancelTree(executor: Executor, table: LeasedTable<unknown>, id: string, reason: string): Promise<CancelOutcome> {
  return inTransaction(
    executor,
    async (trx) => {
      const t = tableRef(table);
      const tree = await execute<{ id: string; open: boolean }>(trx, treeOf(t, id));
      if (tree.length === 0) return { found: false, cancelled: [] };
      const open = tree.filter((r) => r.open).map((r) => String(r.id));
      if (open.length === 0) return { found: true, cancelled: [] };
      const groups = await leaseLockGroupsOfRows(trx, table, open);
      const changed = await execute<{ id: string }>(
        trx,
        // the tree's rows locked in id order before the write, which reaches them in whatever
        // order its plan takes (by page, for a bitmap scan): as a worker's write that ends
        // children locks their parent, lower in id, first, so the two never wait in a cycle
        sql`
          WITH locked AS (
            SELECT l.id FROM ${t} AS l WHERE l.id = ANY(${open}::bigint[]) ORDER BY l.id FOR NO KEY UPDATE
          )
          UPDATE ${t} AS c
          SET status = 'cancelled', resolution = ${`cancelled: ${reason}`.replaceAll('\u0000', '\uFFFD')}, resolved_at = now(),
              done_at = now(), lease_owner = NULL, lease_until = NULL, wait_for = NULL, scheduled = false,
              -- out of its group's queue: the group's next head is chosen among blocked rows
              blocked = false
          WHERE c.id = ANY(ARRAY(SELECT id FROM locked)) AND c.status IN ('pending', 'processing', 'waiting', 'dead')
          RETURNING c.id
        `,
        { prepare: false },
      );
      if (groups.length > 0) await leaseSettleGroups(trx, table, groups);
      const ids = new Set(changed.map((r) => String(r.id)));
      // the task first, then its descendants in id order
      const ordered = [...ids].sort((a, b) => (a === id ? -1 : b === id ? 1 : a.length - b.length || (a < b ? -1 : 1)));
      return { found: true, cancelled: ordered };
    },
    "cancelling a tree of tasks settles their ordering groups",
  );
}

/**
 * The task `id` and its descendants, each with whether it is unfinished. Its cost follows the
 * tree, whatever the table's history or statistics:
 * - each level's children are found by one probe of `<table>_children` per parent: the lateral
 *   subquery (kept whole by `OFFSET 0`) takes its parent's id as a parameter, so it cannot be
 *   hash-joined to the whole table. As a join, with statistics taken while the table was empty,
 *   the planner read all 1,070,000 rows of the table at every level of a 500-task tree;
 * - each row's status travels with it, so the tree is not joined back to the table: with
 *   current statistics that join walked the primary key through 998,000 rows.
 */
function treeOf(t: RawBuilder<unknown>, id: string): RawBuilder<{ id: string; open: boolean }> {
  return sql`
    WITH RECURSIVE tree(id, status) AS (
      SELECT id, status FROM ${t} WHERE id = ${id}::bigint
      UNION
      SELECT c.id, c.status
      FROM tree CROSS JOIN LATERAL (SELECT id, status FROM ${t} WHERE parent_id = tree.id OFFSET 0) AS c
    )
    SELECT id, status IN ('pending', 'processing', 'waiting', 'dead') AS open FROM tree
  `;
}
