import { withTransaction, type Executor, type LeasedTable, type TransactionSource } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql, type RawBuilder } from 'kysely';
import { tableRef } from './table-ref.js';

/**
 * A count the overview shows: `n` rows, or, when `atLeast`, at least `n` (counting stopped at a
 * cap; the page shows "n+").
 */
export interface Bounded {
  readonly n: number;
  readonly atLeast: boolean;
}

/** One queue (a task name, an event type) on the overview. */
export interface OverviewQueue {
  readonly name: string;
  readonly dead: Bounded;
  /** Pending, blocked ones included. */
  readonly pending: Bounded;
  /** Of `pending`: waiting behind an earlier unfinished row of their ordering group. */
  readonly blocked: Bounded;
  readonly processing: Bounded;
  /** `processing` rows whose lease ran out. */
  readonly expiredLeases: Bounded;
  /** Parked workflow runs (sleeping, waiting for children or a signal); null on a table without them. */
  readonly waiting: Bounded | null;
  /** Core's "oldest pending age" (`leaseQueueStats`), in ms; null when none waits. */
  readonly oldestPendingAgeMs: number | null;
  /** The age is a lower bound: the longest-waiting row may be among the rows not read. */
  readonly oldestAtLeast: boolean;
}

/** What {@link overviewQueueCounts} read, with the caps it counted under. */
export interface OverviewCounts {
  readonly queues: readonly OverviewQueue[];
  /** Per queue and status, counting stopped beyond this many rows. */
  readonly countCap: number;
  /** Rows read whole (leases, blocked rows; every figure of a table without a name index), at most. */
  readonly readCap: number;
  /** More names exist than the {@link MAX_NAMES} listed. */
  readonly namesCut: boolean;
}

/** How much the overview's counts may read; the defaults keep a refresh near 20 ms at 10,000,000 rows. */
export interface CountLimits {
  /** Count each queue's pending, dead and waiting rows up to this many; default: {@link COUNT_BUDGET} shared by the queues, in {@link COUNT_CAP_STEPS}. */
  readonly countCap?: number;
  /** Read at most this many rows whole per source (default {@link READ_CAP}). */
  readonly readCap?: number;
}

/**
 * Index entries the per-queue counts may read in all (about 0.3 µs each on a loaded two-core
 * machine, some 20 ms): five queues get 5,000 per figure, twenty 1,000, fifty 500, a hundred 200, more 100 (the least).
 */
export const COUNT_BUDGET = 75_000;
/**
 * A figure's cap: the largest of these the budget allows (round, so the page says "1,000+", not
 * "3,333+"). Beyond 10,000, what a person needs to know is "a lot".
 */
export const COUNT_CAP_STEPS: readonly number[] = [100, 200, 500, 1_000, 2_000, 5_000, 10_000];
/**
 * Rows read from the heap (a random page each beside a large table: 13 µs warm, 40 cold): the
 * leases (ordered by deadline, so the expired ones first) and the blocked rows, whose indexes
 * hold no name.
 */
export const READ_CAP = 500;
/** Queues listed, by name; a schema with more is a misuse of names (an id in a name) and says so. */
export const MAX_NAMES = 200;
/** Pending rows per queue read oldest first for the oldest pending age. */
const OLDEST_ROWS = 50;

/**
 * The overview's figures of a leased table, in one statement (one snapshot), reading a bounded
 * number of index entries and rows whatever the table holds: no finished row is counted.
 *
 * - Names come from a loose scan of core's `<table>_name_status` (name, status, id; every row but
 *   the running ones; migration 16), one probe per name; and from the leases read.
 * - Pending, dead and waiting rows per name are counted from that index without reading the table
 *   (an index-only scan), each up to a cap: exact below it, "cap+" at it.
 * - Running rows and blocked rows sit in indexes without the name (`<table>_leased`,
 *   `<table>_blocked`): up to {@link READ_CAP} rows of each are read whole. Per name their counts
 *   are exact when the table has no more, else lower bounds. Leases are read by deadline, so the
 *   expired ones come first and are all counted unless they alone pass the cap.
 * - The oldest pending age follows core's definition (`waitingSince`): from each name's oldest
 *   pending rows by id and the leases read. Ids grow with creation time and no row waits from
 *   before its creation, so once a row read has waited since its creation, no later row can have
 *   waited longer; otherwise the age is marked as a lower bound.
 *
 * A table without that index (the outbox) has its pending and dead rows read whole like the
 * leases, up to {@link READ_CAP} per source. Takes no locks.
 *
 * It runs in a transaction of its own with JIT, sequential and bitmap scans off (`SET LOCAL`,
 * nothing outlives it): its estimated cost, inflated by the per-name subqueries' row guesses,
 * made the server compile it (31 ms of 52 beside 10,000,000 rows), and statistics taken during a
 * burst could plan a scan of the whole table, or of a whole index, where the first entries of an
 * index hold what is asked.
 */
export async function overviewQueueCounts(
  database: Executor & TransactionSource, table: LeasedTable<unknown>, byName: boolean, limits: CountLimits = {},
): Promise<OverviewCounts> {
  const readCap = limits.readCap ?? READ_CAP;
  const statement = byName ? byNameStatement(table, limits.countCap ?? null, readCap) : readStatement(table, readCap);
  const rows = await withTransaction(database, async (trx) => {
    await execute(trx, sql`SET LOCAL jit = off`);
    await execute(trx, sql`SET LOCAL enable_seqscan = off`);
    // a bitmap scan reads every entry before the LIMIT applies: beside 1,000,000 rows the 9,000
    // blocked ones were read whole and sorted for the 501 the statement keeps
    await execute(trx, sql`SET LOCAL enable_bitmapscan = off`);
    return execute<QueueRow>(trx, statement);
  });
  const first = rows[0];
  const countCap = Number(first?.count_cap ?? limits.countCap ?? COUNT_CAP_STEPS.at(-1));
  const leasesCut = Number(first?.leases_read ?? 0) > readCap;
  const expiredCut = leasesCut && first?.expired_all_read !== true;
  const blockedCut = Number(first?.blocked_read ?? 0) > readCap;
  const bounded = (n: string | null, cut: boolean, cap: number): Bounded => {
    const count = Number(n ?? 0);
    return count > cap ? { n: cap, atLeast: true } : { n: count, atLeast: cut };
  };
  const queues = rows.map((r): OverviewQueue => {
    return {
      name: r.name,
      dead: bounded(r.dead, r.dead_cut === true, byName ? countCap : Number.POSITIVE_INFINITY),
      pending: bounded(r.pending, r.pending_cut === true, byName ? countCap : Number.POSITIVE_INFINITY),
      blocked: bounded(r.blocked, blockedCut, Number.POSITIVE_INFINITY),
      processing: bounded(r.processing, leasesCut, Number.POSITIVE_INFINITY),
      expiredLeases: bounded(r.expired, expiredCut, Number.POSITIVE_INFINITY),
      waiting: table.waits === true ? bounded(r.waiting, r.waiting_cut === true, byName ? countCap : Number.POSITIVE_INFINITY) : null,
      oldestPendingAgeMs: r.oldest_ms === null ? null : Math.max(0, Math.round(Number(r.oldest_ms))),
      oldestAtLeast: r.oldest_exact !== true,
    };
  });
  return { queues, countCap, readCap, namesCut: first?.names_cut === true };
}

interface QueueRow {
  name: string;
  pending: string | null;
  dead: string | null;
  waiting: string | null;
  blocked: string | null;
  processing: string | null;
  expired: string | null;
  oldest_ms: string | null;
  oldest_exact: boolean | null;
  pending_cut: boolean | null;
  dead_cut: boolean | null;
  waiting_cut: boolean | null;
  count_cap: string | null;
  leases_read: string;
  expired_all_read: boolean | null;
  blocked_read: string;
  names_cut: boolean;
}

/**
 * The leases, oldest deadline first (expired ones first), and the blocked rows, each at most
 * `readCap + 1` rows read whole; and per name what they say. Shared by both statements.
 */
function leaseAndBlockedSources(table: LeasedTable<unknown>, readCap: number): RawBuilder<unknown> {
  const t = tableRef(table);
  const name = sql.ref(table.nameColumn);
  return sql`
    leases AS MATERIALIZED (
      SELECT ${name} AS name, lease_until, created_at FROM ${t}
      WHERE status = 'processing' ORDER BY lease_until LIMIT ${readCap + 1}::int
    ),
    blocked_rows AS MATERIALIZED (
      -- in the index's order, so the read stops at the cap (a bitmap scan would read every entry)
      SELECT ${name} AS name FROM ${t}
      WHERE blocked AND status = 'pending' ORDER BY group_key, id LIMIT ${readCap + 1}::int
    ),
    lease_names AS (
      SELECT name, count(*) AS processing, count(*) FILTER (WHERE lease_until < now()) AS expired, min(created_at) AS since
      FROM leases GROUP BY 1
    ),
    blocked_names AS (SELECT name, count(*) AS blocked FROM blocked_rows GROUP BY 1),
    meta AS (
      SELECT (SELECT count(*) FROM leases) AS leases_read,
             -- the last lease read is not expired: every expired one was read before it
             (SELECT max(lease_until) >= now() FROM leases) AS expired_all_read,
             (SELECT count(*) FROM blocked_rows) AS blocked_read
    )`;
}

/** Core's waiting-since of a pending row (`waitingSince` in core's waiting-since.ts), or null when it does not wait yet. */
const PENDING_SINCE = sql`CASE WHEN attempts > 0 THEN created_at WHEN available_at <= now() THEN available_at END`;

/** The task table: names and per-name counts from `<table>_name_status`. */
function byNameStatement(table: LeasedTable<unknown>, fixedCap: number | null, readCap: number): RawBuilder<QueueRow> {
  const t = tableRef(table);
  const name = (alias: string) => sql.ref(`${alias}.${table.nameColumn}`);
  // `status <> 'processing'` written out, so that the planner may take the partial index
  const count = (status: string) => sql`(SELECT count(*) FROM (
        SELECT 1 FROM ${t} AS r WHERE ${name('r')} = a.name AND r.status = ${status} AND r.status <> 'processing'
        LIMIT (SELECT c FROM cap) + 1) AS c)`;
  return sql<QueueRow>`
    WITH RECURSIVE names(name, depth) AS (
      (SELECT ${name('x')}, 1 FROM ${t} AS x WHERE x.status <> 'processing' ORDER BY 1 LIMIT 1)
      UNION ALL
      SELECT (SELECT ${name('y')} FROM ${t} AS y WHERE y.status <> 'processing' AND ${name('y')} > n.name ORDER BY 1 LIMIT 1), n.depth + 1
      FROM names AS n WHERE n.name IS NOT NULL AND n.depth <= ${MAX_NAMES}::int
    ),
    listed AS (SELECT name FROM names WHERE name IS NOT NULL AND depth <= ${MAX_NAMES}::int),
    cap AS (
      -- the largest round step the budget allows every name's three counts
      SELECT coalesce(${fixedCap}::int, (
               SELECT coalesce(max(step), ${COUNT_CAP_STEPS[0]!}::int)
               FROM unnest(${sql.val(COUNT_CAP_STEPS)}::int[]) AS step
               WHERE step * 3 * (SELECT count(*) FROM listed) <= ${COUNT_BUDGET}::int)) AS c
    ),
    ${leaseAndBlockedSources(table, readCap)},
    all_names AS (SELECT name FROM listed UNION SELECT name FROM lease_names UNION SELECT name FROM blocked_names),
    counted AS (
      SELECT a.name, ${count('pending')} AS pending, ${count('dead')} AS dead, ${count('waiting')} AS waiting, o.since, o.exact
      FROM all_names AS a
      LEFT JOIN LATERAL (
        -- the name's oldest pending rows by id; exact once one of them has waited since its creation
        SELECT min(since) AS since, count(*) < ${OLDEST_ROWS}::int OR coalesce(min(since) <= max(created_at), false) AS exact
        FROM (
          SELECT ${PENDING_SINCE} AS since, created_at FROM ${t} AS p
          WHERE ${name('p')} = a.name AND p.status = 'pending' AND p.status <> 'processing' ORDER BY p.id LIMIT ${OLDEST_ROWS}::int
        ) AS oldest
      ) AS o ON true
    )
    SELECT c.name, c.pending, c.dead, c.waiting, b.blocked, l.processing, l.expired,
           extract(epoch FROM now() - least(c.since, l.since)) * 1000 AS oldest_ms,
           -- a lease not read may be older than anything read
           coalesce(c.exact, true) AND m.leases_read <= ${readCap}::int AS oldest_exact,
           false AS pending_cut, false AS dead_cut, false AS waiting_cut,
           (SELECT c FROM cap) AS count_cap, m.leases_read, m.expired_all_read, m.blocked_read,
           (SELECT count(*) FROM names WHERE name IS NOT NULL) > ${MAX_NAMES}::int AS names_cut
    FROM counted AS c LEFT JOIN lease_names AS l USING (name) LEFT JOIN blocked_names AS b USING (name) CROSS JOIN meta AS m
    ORDER BY c.name`;
}

/**
 * A table without a name index (the outbox): its pending and dead rows read whole from their
 * partial indexes, up to `readCap + 1` per source; per name, exact counts when no source reached
 * the cap, else lower bounds.
 */
function readStatement(table: LeasedTable<unknown>, readCap: number): RawBuilder<QueueRow> {
  const t = tableRef(table);
  const name = sql.ref(table.nameColumn);
  const read = (where: RawBuilder<unknown>, order: RawBuilder<unknown>) => sql`(
      SELECT ${name} AS name, status, ${PENDING_SINCE} AS since FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT ${readCap + 1}::int)`;
  // each source spelled as its partial index's predicate, read in the index's order
  return sql<QueueRow>`
    WITH ready AS MATERIALIZED ${read(sql`status = 'pending' AND NOT blocked AND NOT scheduled`, sql`priority DESC, id`)},
    due AS MATERIALIZED ${read(sql`status = 'pending' AND scheduled AND NOT blocked`, sql`available_at, id`)},
    dead AS MATERIALIZED ${read(sql`status = 'dead'`, sql`id`)},
    ${leaseAndBlockedSources(table, readCap)},
    cuts AS (
      SELECT (SELECT count(*) FROM ready) > ${readCap}::int OR (SELECT count(*) FROM due) > ${readCap}::int AS pending_cut,
             (SELECT count(*) FROM dead) > ${readCap}::int AS dead_cut
    ),
    live AS (
      SELECT name, count(*) FILTER (WHERE status = 'pending') AS pending, count(*) FILTER (WHERE status = 'dead') AS dead, min(since) AS since
      FROM (SELECT * FROM ready UNION ALL SELECT * FROM due UNION ALL SELECT * FROM dead) AS r GROUP BY 1
    ),
    all_names AS (SELECT name FROM live UNION SELECT name FROM lease_names UNION SELECT name FROM blocked_names)
    SELECT a.name, v.pending + coalesce(b.blocked, 0) AS pending, v.dead, NULL AS waiting, b.blocked, l.processing, l.expired,
           extract(epoch FROM now() - least(v.since, l.since)) * 1000 AS oldest_ms,
           NOT k.pending_cut AND m.leases_read <= ${readCap}::int AS oldest_exact,
           k.pending_cut OR m.blocked_read > ${readCap}::int AS pending_cut, k.dead_cut, false AS waiting_cut,
           NULL AS count_cap, m.leases_read, m.expired_all_read, m.blocked_read, false AS names_cut
    FROM all_names AS a LEFT JOIN live AS v USING (name) LEFT JOIN lease_names AS l USING (name)
    LEFT JOIN blocked_names AS b USING (name) CROSS JOIN meta AS m CROSS JOIN cuts AS k
    ORDER BY a.name`;
}
