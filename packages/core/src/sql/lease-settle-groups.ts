import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { groupTableRef, tableRef } from './table-ref.js';
import { handedRows, handoffParts, type HeadHandoff } from './lease-claim.js';
import type { LockedGroup } from './lease-lock-groups.js';
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
 * What the caller knows (`known`) spares reads: the rows as `leaseLockFinishingGroups` locked
 * them are read and written where they lie instead of looked up by key again, and a producer's
 * lowest inserted id is where a new group's first row is looked for.
 *
 * @returns how many rows it unblocked
 */
export async function leaseSettleGroups(
  executor: Executor,
  table: LeasedTable<unknown>,
  groups: readonly string[],
  known: GroupsKnown = {},
): Promise<number> {
  const source = groupSource(groups, known);
  if (source === undefined) return 0;
  const rows = await execute<SettleRow>(executor, settleStatement(table, source, undefined), { prepare: false });
  return settled(rows).promoted;
}

/** What the caller of {@link leaseSettleGroups} knows of the groups, to spare the settle reads. */
export interface GroupsKnown {
  /** The groups' rows as `leaseLockFinishingGroups` locked them, in this transaction. */
  readonly locked?: readonly LockedGroup[] | undefined;
  /**
   * The lowest id this transaction inserted (a producer's): a group whose row it made has no
   * row below it, so the group's first head is looked for from there, not from the group's start.
   */
  readonly insertedFrom?: string | undefined;
}

/** What {@link leaseSettleGroupsHanding} did. */
export interface SettledGroups<Row> {
  /** Next heads made claimable (unblocked) for any worker. */
  readonly promoted: number;
  /** The lowest id of those, or null when none: a claim that starts above it would pass it. */
  readonly promotedFrom: string | null;
  /** Next heads claimed for the hand-off's owner, sorted by id, as a claim returns them. */
  readonly handed: Claimed<Row>[];
}

/**
 * {@link leaseSettleGroups} by a worker that takes the next heads it can run itself (none when
 * `handoff` is undefined), and learns where those it left to any claim lie: each next
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
  handoff: HeadHandoff | undefined,
  known: GroupsKnown = {},
): Promise<SettledGroups<Row>> {
  const source = groupSource(groups, known);
  if (source === undefined) return { promoted: 0, promotedFrom: null, handed: [] };
  const hand = handoff !== undefined && handoff.max > 0 && table.claimJson !== undefined ? handoff : undefined;
  const rows = await execute<SettleRow>(executor, settleStatement(table, source, hand), { prepare: false });
  const { promoted, promotedFrom, chunks } = settled(rows);
  return { promoted, promotedFrom, handed: hand === undefined ? [] : handedRows(table, chunks, hand.owner) };
}

// the counts' row (rows null), then with a hand-off a row per chunk of claimed rows (promoted null)
interface SettleRow {
  readonly promoted: string | null;
  readonly promoted_from: string | null;
  /** Groups whose head was gone, and of them those whose row the statement wrote (headed or emptied). */
  readonly headless: string | null;
  readonly written: string | null;
  readonly rows?: string | null;
}

/** The groups to settle: their keys (and a producer's lowest id), or their rows as the lock found them when it found every one. */
type GroupSource = { readonly keys: readonly string[]; readonly insertedFrom: string | null } | { readonly locked: readonly LockedGroup[] };

/**
 * Most groups whose locked rows the settle takes. A group's row has many versions to walk only
 * when the group had many heads finish while the horizon was held, and such groups come a few
 * per write; a write of hundreds of groups (a drain over many aggregates, each with few versions)
 * sends their keys alone: three arrays of hundreds of values cost the dispatcher 1-2 ms of CPU per
 * 1,000 messages more (bench/RESULTS.md).
 */
const LOCKED_ROWS_MAX = 16;

/** Below every id: a group whose first head is not known is looked through from its start. */
const ID_MIN = sql.raw(`'-9223372036854775808'::bigint`);

function groupSource(groups: readonly string[], { locked, insertedFrom }: GroupsKnown): GroupSource | undefined {
  const keys = [...new Set(groups)];
  if (keys.length === 0) return undefined;
  // the lock found every group's row (it returns only the rows of these keys, one each)
  if (locked !== undefined && locked.length === keys.length && keys.length <= LOCKED_ROWS_MAX) return { locked };
  return { keys, insertedFrom: insertedFrom ?? null };
}

function settled(rows: readonly SettleRow[]): { promoted: number; promotedFrom: string | null; chunks: string[] } {
  const chunks: string[] = [];
  let promoted = 0;
  let promotedFrom: string | null = null;
  for (const row of rows) {
    if (row.rows != null) {
      chunks.push(row.rows);
      continue;
    }
    promoted = Number(row.promoted ?? 0);
    promotedFrom = row.promoted_from;
    // a group row written by ctid that was not there any more would leave its next row unblocked
    // and its head unrecorded: roll back rather than commit that (the lock makes it impossible)
    if (Number(row.written ?? 0) !== Number(row.headless ?? 0)) {
      throw new Error(`settling ordering groups wrote ${row.written} of ${row.headless} group rows whose head was gone`);
    }
  }
  return { promoted, promotedFrom, chunks };
}

function settleStatement(table: LeasedTable<unknown>, source: GroupSource, handoff: HeadHandoff | undefined): RawBuilder<SettleRow> {
  const t = tableRef(table);
  const g = groupTableRef(table);
  // a head still unfinished keeps its group as it is (see leaseSettleGroups)
  const gone = (headId: RawBuilder<unknown>) =>
    sql`coalesce((SELECT h.status FROM ${t} AS h WHERE h.id = ${headId}), 'gone') NOT IN ('pending', 'processing', 'waiting', 'dead')`;
  const headless =
    'locked' in source
      ? // the rows as the lock returned them: nothing wrote them since (see LockedGroup)
        sql`
        SELECT x.group_key, x.head_id, x.first_id, x.row_id, NULL::bigint AS inserted_from
        FROM unnest(${source.locked.map((l) => l.key)}::text[], ${source.locked.map((l) => l.headId)}::bigint[],
                    ${source.locked.map((l) => l.firstId)}::bigint[], ${source.locked.map((l) => l.rowId)}::tid[])
             AS x(group_key, head_id, first_id, row_id)
        WHERE ${gone(sql`x.head_id`)}`
      : sql`
        SELECT grp.group_key, grp.head_id, grp.first_id, grp.ctid AS row_id, ${source.insertedFrom}::bigint AS inserted_from
        FROM ${g} AS grp
        WHERE grp.group_key = ANY(${source.keys}::text[])
          -- the head's status by its primary key, one lookup per group (a scalar subquery is
          -- never turned into a join): as NOT EXISTS, and with the updates below joined to next,
          -- the planner read the whole table to settle 250 groups beside 20,000 rows (twice with
          -- statistics from an empty table; test/core/settle-groups-scale.int.test.ts)
          AND ${gone(sql`grp.head_id`)}`;
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
      WITH headless AS (${headless}
      ), next AS (
        SELECT headless.group_key, headless.row_id, headless.head_id AS gone_head,
               -- the group's key as a range, not "=": with "=" the planner may walk the primary
               -- key in id order through every blocked row of the other groups (12 s for 1,000
               -- new groups beside 70,000 blocked rows); a range keeps group_key in the ORDER BY,
               -- which only the blocked index serves.
               -- First past the head that finished (or, in a group its producer just made, from
               -- the lowest id it inserted): a group's rows take their ids under its lock, so
               -- every row behind a head has a higher id. From the group's start, the scan read an
               -- entry for every row of the group ever blocked, which stay in the index while a
               -- long transaction elsewhere holds the horizon: one long group's drain was
               -- quadratic, and so was a busy group that empties after each row.
               -- Below that only when nothing is found there (a group left empty), so a row below
               -- a head would still be found; and only from the group's first head since its row
               -- was made (first_id, core migration 23), below which every row had finished
               coalesce(
                 (SELECT b.id FROM ${t} AS b
                  WHERE b.group_key >= headless.group_key AND b.group_key <= headless.group_key AND b.blocked
                    AND b.id >= coalesce(headless.head_id + 1, headless.inserted_from)
                  ORDER BY b.group_key, b.id LIMIT 1),
                 (SELECT b.id FROM ${t} AS b
                  WHERE b.group_key >= headless.group_key AND b.group_key <= headless.group_key AND b.blocked
                    AND b.id >= coalesce(headless.first_id, ${ID_MIN})
                  ORDER BY b.group_key, b.id LIMIT 1)) AS id
        FROM headless
      )${handing}, unblocked AS (
        -- each row and group by its primary key (ANY(ARRAY(…)), see byPrimaryKey)
        UPDATE ${t} AS u SET blocked = false
        WHERE u.id = ANY(ARRAY(SELECT id FROM next WHERE id IS NOT NULL)) ${notHanded}
        RETURNING u.id
      ), headed AS (
        -- each group's row where it lies (its ctid), not looked up by its key again: every writer
        -- of a group writes its row, and while a long transaction elsewhere holds the horizon a
        -- lookup by key walks every version written since (three per finished head, a long
        -- group's drain slowing as it went)
        -- a group's first head is the one chosen when it had none (its row just made)
        UPDATE ${g} AS grp SET head_id = next.id, first_id = CASE WHEN next.gone_head IS NULL THEN next.id ELSE grp.first_id END,
                               updated_at = now()
        FROM next
        WHERE grp.ctid = ANY(ARRAY(SELECT row_id FROM next WHERE id IS NOT NULL)) AND grp.ctid = next.row_id
        RETURNING 1
      ), emptied AS (
        DELETE FROM ${g} AS grp WHERE grp.ctid = ANY(ARRAY(SELECT row_id FROM next WHERE id IS NULL))
        RETURNING 1
      ), woken AS (
        -- only for heads left to any worker: a handed one is this worker's already
        SELECT pg_notify(${table.channel}, '') FROM (SELECT 1 FROM unblocked LIMIT 1) AS any_unblocked
        -- only while a worker may be asleep (core migration 5; the caller holds the wake lock since
        -- leaseLockGroups); a table without a wake sequence always notifies
        WHERE ${sleeperMayBeAsleep(table)}
      )
      -- woken is a plain SELECT: it runs only if read
      SELECT (SELECT count(*) FROM unblocked) AS promoted, (SELECT min(id) FROM unblocked)::text AS promoted_from,
             (SELECT count(*) FROM woken) AS notified,
             (SELECT count(*) FROM headless) AS headless,
             (SELECT count(*) FROM headed) + (SELECT count(*) FROM emptied) AS written${parts === undefined ? sql`` : sql`, NULL::text AS rows
      UNION ALL
      SELECT NULL, NULL, NULL, NULL, NULL, ch.rows FROM (${parts.chunks}) AS ch`}
    `;
}
