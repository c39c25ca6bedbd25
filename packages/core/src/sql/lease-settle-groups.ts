import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { groupTableRef, tableRef } from './table-ref.js';
import { handedRows, handoffParts, type HeadHandoff } from './lease-claim.js';
import type { Claimed } from './lease-row.js';
import { sleeperMayBeAsleep } from './wake-sleepers.js';

/**
 * Gives each of the given groups its head: for a group whose head is gone (never chosen, or
 * finished since — done or skipped), the group's lowest blocked row is unblocked and becomes
 * the head; a group left with no unfinished row loses its `<table>_group` row. A group whose
 * head is still unfinished (pending, processing or dead — a dead head keeps blocking its group
 * until a person retries or skips it; a parked one, `waiting`, until it ends) is left alone. Sends one NOTIFY on the table's channel
 * when it unblocked anything while a worker may be asleep (see core migration 5), so idle
 * workers claim the new heads at once.
 *
 * The caller must hold the groups' locks ({@link leaseLockGroups}) in the same transaction, and
 * this must be a later statement than the one that took them: its snapshot then holds every row
 * that any other writer of these groups committed. Locks: the unblocked rows and the group rows.
 *
 * @returns how many rows it unblocked
 */
export async function leaseSettleGroups(executor: Executor, table: LeasedTable<unknown>, groups: readonly string[]): Promise<number> {
  const keys = [...new Set(groups)];
  if (keys.length === 0) return 0;
  const [row] = await execute<SettleRow>(executor, settleStatement(table, keys, undefined), { prepare: false });
  return Number(row?.promoted ?? 0);
}

/** What {@link leaseSettleGroupsHanding} did. */
export interface SettledGroups<Row> {
  /** Next heads made claimable (unblocked) for any worker. */
  readonly promoted: number;
  /** Next heads claimed for the hand-off's owner, sorted by id, as a claim returns them. */
  readonly handed: Claimed<Row>[];
}

/**
 * {@link leaseSettleGroups} by a worker that takes the next heads it can run itself: each next
 * head that its own claim could take now (pending, due, not under a limit, of a name and version
 * it serves; at most `handoff.max`, lowest ids first) goes straight from blocked to `processing`
 * for `handoff.owner`, exactly as a claim would write it (a new lease, `lease_version + 1`,
 * `attempts + 1`). The rest are unblocked as {@link leaseSettleGroups} does, with its NOTIFY.
 * One row version and no claim per ordered row, where unblock-then-claim writes two and waits for
 * a claim. Only for a table whose claims send JSON (`claimJson`); without, nothing is handed.
 */
export async function leaseSettleGroupsHanding<Row>(
  executor: Executor,
  table: LeasedTable<Row>,
  groups: readonly string[],
  handoff: HeadHandoff,
): Promise<SettledGroups<Row>> {
  const keys = [...new Set(groups)];
  if (keys.length === 0) return { promoted: 0, handed: [] };
  const hand = handoff.max > 0 && table.claimJson !== undefined ? handoff : undefined;
  const rows = await execute<SettleRow>(executor, settleStatement(table, keys, hand), { prepare: false });
  const chunks: string[] = [];
  let promoted = 0;
  for (const row of rows) {
    if (row.rows == null) promoted = Number(row.promoted ?? 0);
    else chunks.push(row.rows);
  }
  return { promoted, handed: hand === undefined ? [] : handedRows(table, chunks, hand.owner) };
}

// the counts' row (rows null), then with a hand-off a row per chunk of claimed rows (promoted null)
interface SettleRow {
  readonly promoted: string | null;
  readonly rows?: string | null;
}

function settleStatement(table: LeasedTable<unknown>, keys: readonly string[], handoff: HeadHandoff | undefined): RawBuilder<SettleRow> {
  const t = tableRef(table);
  const g = groupTableRef(table);
  const parts = handoff === undefined ? undefined : handoffParts(table, handoff);
  // the next heads this worker takes (see leaseSettleGroupsHanding): locked by the UPDATE that claims them
  const handing = parts === undefined
    ? sql``
    : sql`, handed AS (
        SELECT c.id FROM ${t} AS c
        WHERE c.id = ANY(ARRAY(SELECT id FROM next WHERE id IS NOT NULL)) AND c.blocked AND ${parts.claimable}
        ORDER BY c.id LIMIT ${handoff!.max}
      ), ${parts.claimed(sql`handed`)}`;
  const notHanded = parts === undefined ? sql`` : sql`AND NOT u.id = ANY(ARRAY(SELECT id FROM handed))`;
  return sql<SettleRow>`
      WITH headless AS (
        SELECT grp.group_key FROM ${g} AS grp
        WHERE grp.group_key = ANY(${keys}::text[])
          -- the head's status by its primary key, one lookup per group (a scalar subquery is
          -- never turned into a join): as NOT EXISTS, and with the updates below joined to next,
          -- the planner read the whole table to settle 250 groups beside 20,000 rows (twice with
          -- statistics from an empty table; test/core/settle-groups-scale.int.test.ts)
          AND coalesce((SELECT h.status FROM ${t} AS h WHERE h.id = grp.head_id), 'gone') NOT IN ('pending', 'processing', 'waiting', 'dead')
      ), next AS (
        SELECT headless.group_key,
               -- the group's key as a range, not "=": with "=" the planner may walk the primary
               -- key in id order through every blocked row of the other groups (12 s for 1,000
               -- new groups beside 70,000 blocked rows); a range keeps group_key in the ORDER BY,
               -- which only the blocked index serves
               (SELECT b.id FROM ${t} AS b
                WHERE b.group_key >= headless.group_key AND b.group_key <= headless.group_key AND b.blocked
                ORDER BY b.group_key, b.id LIMIT 1) AS id
        FROM headless
      )${handing}, unblocked AS (
        -- each row and group by its primary key (ANY(ARRAY(…)), see byPrimaryKey)
        UPDATE ${t} AS u SET blocked = false
        WHERE u.id = ANY(ARRAY(SELECT id FROM next WHERE id IS NOT NULL)) ${notHanded}
        RETURNING u.id
      ), headed AS (
        UPDATE ${g} AS grp SET head_id = next.id, updated_at = now()
        FROM next
        WHERE grp.group_key = ANY(ARRAY(SELECT group_key FROM next WHERE id IS NOT NULL)) AND grp.group_key = next.group_key
        RETURNING 1
      ), emptied AS (
        DELETE FROM ${g} AS grp WHERE grp.group_key = ANY(ARRAY(SELECT group_key FROM next WHERE id IS NULL))
        RETURNING 1
      ), woken AS (
        -- only for heads left to any worker: a handed one is this worker's already
        SELECT pg_notify(${table.channel}, '') FROM (SELECT 1 FROM unblocked LIMIT 1) AS any_unblocked
        -- only while a worker may be asleep (core migration 5; the caller holds the wake lock since
        -- leaseLockGroups); a table without a wake sequence always notifies
        WHERE ${sleeperMayBeAsleep(table)}
      )
      -- woken is a plain SELECT: it runs only if read
      SELECT (SELECT count(*) FROM unblocked) AS promoted, (SELECT count(*) FROM woken) AS notified${parts === undefined ? sql`` : sql`, NULL::text AS rows
      UNION ALL
      SELECT NULL, NULL, ch.rows FROM (${parts.chunks}) AS ch`}
    `;
}
