import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { stripeClaimCtes, stripeWriteCtes } from './lease-claim-stripes.js';
import { LIMITED_READY as READY, stripeTable } from './limit-stripes.js';
import { limitedReadyRanges } from './limited-ready.js';

/** What the limit part of the claim is built from (see `leaseClaim`). */
export interface LimitClaimParts {
  readonly table: LeasedTable<unknown>;
  /** `"schema"."task"` */
  readonly t: RawBuilder<unknown>;
  /** The claim's LIMIT: a literal or the batch parameter. */
  readonly limit: RawBuilder<unknown>;
  /** `AND c.<name> = ANY(names)`, or nothing. */
  readonly nameFilter: RawBuilder<unknown>;
  /** The limits this claim serves (a `text[]` constant, see `leaseClaim`). */
  readonly flows: RawBuilder<unknown>;
  /** Most rows under limits to take (an integer parameter). */
  readonly flowBatch: RawBuilder<unknown>;
  /**
   * Per served limit, in the order of `flows`, the lowest id of key '' and priority 0 its ready
   * rows are read from (a `bigint[]` parameter; see `LeaseClaimInput.flowFloors`).
   */
  readonly floors: RawBuilder<unknown>;
  /**
   * `AND c.lease_until >= …` on an expired lease under a limit (`c`): the window of a claim that
   * looks for expired leases (`LeaseClaimInput.expired`), or `AND false` in one that does not, so
   * that a limit's expired leases are looked for on the unlimited ones' cadence. Every look reads
   * the limit's running tasks' index (`task_flow_held_id`), which keeps an entry for every task that
   * ran under the limit while a long transaction elsewhere holds the horizon (a striped limit's
   * look for whether one waits reads each stripe from its `low` only).
   */
  readonly expiredWindow: RawBuilder<unknown>;
}

/**
 * A limit's rate is also paced (GCRA, the leaky bucket as a meter): starts are spaced
 * `period / limit` apart on average, with at most a tenth of the period's starts at once. The
 * sliding window alone lets the whole period's starts go together once the previous ones leave
 * it, and then the jitter between a claim and its handler's start lets a downstream system that
 * counts by its own clock see more than `limit` in some period. `rate_tat` is the meter's
 * theoretical arrival time: the next start conforms once the clock is within the tolerance of it.
 */
const TOLERANCE = sql`greatest(l.rate_period_ms / 10.0, l.rate_period_ms::float8 / l.rate)`;
const INTERVAL = sql`(l.rate_period_ms::float8 / l.rate)`;

/**
 * The CTEs every claim under limits begins with: `flow_due` and `flow_promoted` (scheduled rows of
 * a served limit that came due, moved where the next claim takes them), and `flow_active (name,
 * lapsed, ready, striped)`, the served limits with a row to take or an expired lease to take over.
 */
function flowSourceCtes(p: LimitClaimParts): RawBuilder<unknown> {
  const { t, limit, flows } = p;
  const lt = sql.id(p.table.schema, p.table.limitTable!);
  return sql`
      , flow_floor AS (
        -- where each served limit's ready rows of key '' and priority 0 are read from
        SELECT x.name, x.floor FROM unnest(${flows}, ${p.floors}) AS x(name, floor)
      ), flow_due AS (
        -- rows of a limit that were scheduled and are due now: promoted into task_flow_ready, where
        -- they compete by priority; the claim after this one can take them
        SELECT d.id FROM ${lt} AS f
        CROSS JOIN LATERAL (
          SELECT c.id FROM ${t} AS c
          WHERE c.flow = f.name AND c.status = 'pending' AND c.scheduled AND NOT c.blocked AND c.available_at <= now()
          ORDER BY c.available_at, c.id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) AS d
        WHERE f.name = ANY(${flows}::text[])
      ), flow_promoted AS (
        UPDATE ${t} AS p SET scheduled = false WHERE p.id = ANY(ARRAY(SELECT id FROM flow_due)) RETURNING p.id
      ), flow_active AS (
        -- served limits with a row to take, as far as this snapshot shows: only these are locked
        -- (each probe a scalar subquery ordered as its index is: EXISTS drops the ORDER BY, and
        -- the planner may then scan the table for a first match); lapsed: an expired lease waits
        -- under the limit, and its task needs its slot seen free (see flow_need)
        SELECT a.name, a.lapsed, a.ready, a.striped FROM (
          SELECT f.name, f.stripes > 0 AS striped,
                 coalesce((SELECT true FROM (${limitedReadyRanges({ t, flow: sql`f.name`, floor: sql`ff.floor`, where: sql``, columns: sql`1`, limit: sql`1`, lock: false })}
                           ) AS r LIMIT 1), false) AS ready,
                 coalesce(CASE WHEN f.stripes > 0 THEN
                   -- striped: each stripe's running tasks from its low (see stripeClaimCtes); read
                   -- by the limit alone, the look walked an entry for every task that ran under it
                   -- while a long transaction elsewhere held the horizon (60 ms at 100,000)
                   (SELECT true FROM ${stripeTable(p.table)} AS s CROSS JOIN LATERAL (
                      SELECT 1 FROM ${t} AS c WHERE c.flow = s.name AND c.flow_slot = s.stripe AND c.status = 'processing'
                        AND c.id >= CASE WHEN s.low_at = s.claims THEN s.low ELSE 0 END
                        AND c.lease_until < now() ${p.expiredWindow} AND c.attempts < c.max_attempts LIMIT 1
                    ) AS x WHERE s.name = f.name LIMIT 1)
                 ELSE (SELECT true FROM ${t} AS c WHERE c.flow = f.name AND c.status = 'processing'
                       AND c.lease_until < now() ${p.expiredWindow} AND c.attempts < c.max_attempts ORDER BY c.lease_until LIMIT 1) END, false) AS lapsed
          FROM ${lt} AS f JOIN flow_floor AS ff ON ff.name = f.name
          WHERE f.name = ANY(${flows}::text[])
          -- (each probe once: flattened, the filter below would run them again)
          OFFSET 0
        ) AS a
        WHERE a.ready OR a.lapsed
      )`;
}

/**
 * The CTEs that take rows under limits (docs/flow-control.md), to follow the claim's unlimited
 * sources. They yield `flow_taken (id, priority)`: rows whose limits have room for them, at most
 * what each limit, key and rate allows, locked; and they write `flow_promoted` and, once the
 * claim's UPDATE (`claimed`, which must return `flow` and `flow_key`) has run, `flow_written`.
 *
 * Reads, per served limit with rows waiting: its `<table>_limit` row, locked (`FOR UPDATE`, in
 * name order, so claims of one limit take turns and never deadlock), and slot holders' rows by
 * their primary keys (all of them, or for a limit of concurrency alone only as far down the list
 * as the room it asks for takes: see flow_need); then, only while the limit has room, for a limit
 * with a per-key bound (or an expired lease to take over) one index probe per key with ready rows
 * (however many rows wait behind it) and, for the keys that rank first, their first rows up to the
 * key's room (the r-th key at most batch - r + 1), and for any other limit its first ready rows up
 * to its room. A limit or key without room reads none of its rows. Locks only the rows it admits
 * (`FOR UPDATE SKIP LOCKED`), and the due rows it promotes.
 */
export function limitClaimCtes(p: LimitClaimParts): RawBuilder<unknown> {
  const { t, limit, nameFilter, flowBatch } = p;
  const lt = sql.id(p.table.schema, p.table.limitTable!);
  return sql`${flowSourceCtes(p)}, flow_limits AS (
        -- waits for the claim of the same limit before it, if any: then reads its bookkeeping as
        -- that claim committed it (a locking read returns the latest row version)
        -- (a striped limit's claims lock a stripe instead, see stripeClaimCtes; one that changed
        -- to stripes while this claim waited for its row is left out here, as the row it locks says)
        SELECT l.* FROM ${lt} AS l WHERE l.name IN (SELECT name FROM flow_active) AND l.stripes = 0 ORDER BY l.name
        FOR UPDATE
      ), flow_clock AS (
        -- read once every lock is granted: each claim of a limit stamps its starts no earlier than
        -- the claim before it, so the sliding window counts every start it must
        SELECT date_part('epoch', clock_timestamp()) * 1000 AS at FROM (SELECT count(*) FROM flow_limits) AS locked
      ), flow_need AS (
        -- how many listed leases that hold no slot this claim looks for (null: it checks them
        -- all). A limit of concurrency alone needs only enough to make room for the claim's rows,
        -- none while its list has that room; the rest stay counted as holding, which can only
        -- start fewer. Leases are looked for in list order, oldest claim first: those are the
        -- likeliest to be over. Every lease is checked when the limit counts per key (a key's
        -- count must not keep a finished lease), and while an expired lease waits under the
        -- limit (its task needs its slot seen free to run again)
        SELECT l.name AS flow,
               CASE WHEN l.concurrency IS NULL OR l.concurrency_per_key IS NOT NULL OR a.lapsed THEN NULL
                    ELSE greatest(0, ${flowBatch}::int - (l.concurrency - cardinality(l.holder_ids))) END AS n
        FROM flow_limits AS l JOIN flow_active AS a ON a.name = l.name
      ), flow_freed AS (
        -- listed leases that hold no slot, found by their rows (one primary-key lookup per entry
        -- looked at, whatever the planner guesses; the look stops once it has found flow_need's
        -- count): neither still running under that version, nor claimed after this statement's
        -- snapshot (the row still shows an older version here). open: still processing under
        -- that version, its lease expired (see limitWriteCtes)
        SELECT n.flow, x.id, x.version, x.key, x.open, x.pos
        FROM flow_need AS n JOIN flow_limits AS l ON l.name = n.flow
        CROSS JOIN LATERAL (
          SELECT h.id, h.version, h.key, coalesce(s.open, false) AS open, h.pos
          FROM unnest(l.holder_ids, l.holder_versions, l.holder_keys) WITH ORDINALITY AS h(id, version, key, pos)
          -- (a row no longer there, purged after it finished, holds nothing)
          LEFT JOIN LATERAL (
            SELECT r.lease_version < h.version AS later,
                   r.lease_version = h.version AND r.status = 'processing' AS open,
                   r.lease_version = h.version AND r.status = 'processing' AND r.lease_until >= now() AS running
            FROM ${t} AS r WHERE r.id = h.id
          ) AS s ON true
          WHERE s.later IS NOT TRUE AND s.running IS NOT TRUE
          LIMIT n.n
        ) AS x
      ), flow_seen AS (
        -- a limit of concurrency alone (flow_need's n set): how many slots its list holds now,
        -- and how far down it the leases flow_freed found over reach (seen). The entries past
        -- that point are kept as they are (they hold their slots, or were not looked at, which
        -- counts them as holding), so neither counting the holders nor writing the list back
        -- goes through the whole list
        SELECT n.flow, cardinality(l.holder_ids) - coalesce(f.freed, 0) AS held, coalesce(f.last, 0) AS seen
        FROM flow_need AS n JOIN flow_limits AS l ON l.name = n.flow
        LEFT JOIN (SELECT flow, count(*) AS freed, max(pos) AS last FROM flow_freed GROUP BY flow) AS f ON f.flow = n.flow
        WHERE n.n IS NOT NULL AND l.rate_per_key IS NULL
      ), flow_holders AS (
        -- the slots held now, of every other limit: every listed lease but those found above (a
        -- finished row, an expired lease and a lease taken over since hold none; an expired one
        -- stays listed, see limitWriteCtes), in list order
        SELECT l.name AS flow, h.id, h.version, h.key
        FROM flow_limits AS l CROSS JOIN LATERAL unnest(l.holder_ids, l.holder_versions, l.holder_keys) AS h(id, version, key)
        WHERE NOT EXISTS (SELECT 1 FROM flow_freed AS f WHERE f.flow = l.name AND f.id = h.id AND f.version = h.version)
          AND NOT EXISTS (SELECT 1 FROM flow_seen AS s WHERE s.flow = l.name)
      ), flow_starts AS (
        -- starts still inside a window: of the limit's rate, or of its per-key rate
        SELECT l.name AS flow, s.at, s.key,
               coalesce(s.at > k.at - l.rate_period_ms, false) AS in_rate,
               coalesce(s.at > k.at - l.rate_per_key_period_ms, false) AS in_key_rate
        FROM flow_limits AS l CROSS JOIN flow_clock AS k
        CROSS JOIN LATERAL unnest(l.start_at, l.start_keys) AS s(at, key)
        WHERE s.at > k.at - greatest(coalesce(l.rate_period_ms, 0), coalesce(l.rate_per_key_period_ms, 0))
      ), flow_room AS (
        -- how many rows each limit may start now (least ignores the bounds it does not have);
        -- plain: no per-key bound and no expired lease to take over, so its rows are taken in one
        -- range of its index (flow_plain) instead of key by key
        SELECT l.name AS flow, l.concurrency_per_key, l.rate_per_key,
               l.concurrency_per_key IS NULL AND l.rate_per_key IS NULL AND NOT a.lapsed AS plain,
               least(${flowBatch}::int,
                     l.concurrency - coalesce((SELECT s.held FROM flow_seen AS s WHERE s.flow = l.name),
                                              (SELECT count(*) FROM flow_holders AS h WHERE h.flow = l.name)),
                     l.rate - (SELECT count(*) FROM flow_starts AS s WHERE s.flow = l.name AND s.in_rate),
                     -- starts conforming to the rate's pace now (see TOLERANCE)
                     floor((k.at + ${TOLERANCE} - greatest(coalesce(l.rate_tat, 0), k.at)) / ${INTERVAL})::int + 1) AS n
        FROM flow_limits AS l JOIN flow_active AS a ON a.name = l.name CROSS JOIN flow_clock AS k
      ), flow_keys AS (
        -- each key of a limit with room that has ready rows, with its best row: one index probe per
        -- key (task_flow_ready), however many rows wait behind it (past the few that claims before
        -- this one took, which this snapshot may still show pending, and, for a worker that runs
        -- only some of the limit's task types, past the others' rows)
        SELECT r.flow, b.flow_key, b.priority, b.id
        FROM flow_room AS r CROSS JOIN LATERAL (
          SELECT c.flow_key, c.priority, c.id FROM ${t} AS c
          WHERE c.flow = r.flow AND ${READY} AND c.id NOT IN (SELECT id FROM flow_holders) ${nameFilter}
          ORDER BY c.flow_key, c.priority DESC, c.id LIMIT 1
        ) AS b
        WHERE r.n > 0 AND NOT r.plain
        UNION ALL
        SELECT k.flow, b.flow_key, b.priority, b.id
        FROM flow_keys AS k CROSS JOIN LATERAL (
          SELECT c.flow_key, c.priority, c.id FROM ${t} AS c
          WHERE c.flow = k.flow AND ${READY} AND c.flow_key > k.flow_key AND c.id NOT IN (SELECT id FROM flow_holders) ${nameFilter}
          ORDER BY c.flow_key, c.priority DESC, c.id LIMIT 1
        ) AS b
      ), flow_expired AS (
        -- a crashed worker's row under a limit: its expired lease holds no slot, so it needs one
        SELECT c.id, c.priority, c.flow, c.flow_key FROM ${t} AS c
        WHERE c.status = 'processing' AND c.lease_until < now() ${p.expiredWindow} AND c.attempts < c.max_attempts
          -- (an array: an empty one reads nothing, where IN read the running tasks' index first)
          AND c.flow = ANY(ARRAY(SELECT flow FROM flow_room WHERE n > 0 AND NOT plain)) ${nameFilter}
          AND c.id NOT IN (SELECT id FROM flow_holders)
        ORDER BY c.lease_until, c.id
        LIMIT ${limit}
      ), flow_held AS (
        SELECT h.flow, h.key, count(*) AS n FROM flow_holders AS h GROUP BY h.flow, h.key
      ), flow_started AS (
        SELECT s.flow, s.key, count(*) AS n FROM flow_starts AS s WHERE s.in_key_rate GROUP BY s.flow, s.key
      ), flow_key_room AS (
        -- how many rows each key may start now: the limit's room, less the key's running leases
        -- and its starts inside the per-key window
        SELECT x.flow, x.flow_key,
               least(r.n, r.concurrency_per_key - coalesce(h.n, 0), r.rate_per_key - coalesce(st.n, 0)) AS n
        FROM (SELECT flow, flow_key FROM flow_keys UNION SELECT flow, flow_key FROM flow_expired) AS x
        JOIN flow_room AS r ON r.flow = x.flow
        LEFT JOIN flow_held AS h ON h.flow = x.flow AND h.key = x.flow_key
        LEFT JOIN flow_started AS st ON st.flow = x.flow AND st.key = x.flow_key
      ), flow_ranked AS (
        -- the keys with room by their best rows, per limit
        SELECT k.flow, k.flow_key, k.priority, k.id, kr.n,
               row_number() OVER (PARTITION BY k.flow ORDER BY k.priority DESC, k.id) AS pos
        FROM flow_keys AS k JOIN flow_key_room AS kr ON kr.flow = k.flow AND kr.flow_key = k.flow_key
        WHERE kr.n > 0
      ), flow_cut AS (
        -- per limit with room n and at least n keys with room, the n-th best of those keys' best
        -- rows: n rows at least that good can start, so no row ranked below it can, and each key
        -- is read only down to it (with fewer keys, each is read down to its room)
        SELECT k.flow, k.priority, k.id
        FROM flow_ranked AS k JOIN flow_room AS r ON r.flow = k.flow
        WHERE k.pos = r.n
      ), flow_ready AS (
        -- read, not locked: claims of a limit take turns, so nothing else takes these rows but a
        -- claim before this one, whose rows are among the holders; only the rows admitted below
        -- are locked. Two range scans per key (rows of a higher priority than the cut's, and rows
        -- of its priority up to its id), so that the scan stops at the cut
        SELECT c.id, c.priority, k.flow, k.flow_key, k.n AS key_n
        FROM flow_ranked AS k LEFT JOIN flow_cut AS cut ON cut.flow = k.flow
        CROSS JOIN LATERAL (
          (SELECT c.id, c.priority FROM ${t} AS c
           WHERE c.flow = k.flow AND c.flow_key = k.flow_key AND ${READY} ${nameFilter}
             -- priority is an integer: below every priority when there is no cut
             AND c.priority > coalesce(cut.priority::bigint, -2147483649)
             AND c.id NOT IN (SELECT id FROM flow_holders)
           ORDER BY c.priority DESC, c.id LIMIT k.n)
          UNION ALL
          (SELECT c.id, c.priority FROM ${t} AS c
           WHERE c.flow = k.flow AND c.flow_key = k.flow_key AND ${READY} ${nameFilter}
             AND c.priority = cut.priority AND c.id <= cut.id
             AND c.id NOT IN (SELECT id FROM flow_holders)
           ORDER BY c.id LIMIT k.n)
        ) AS c
        -- a key whose best row ranks below the cut has none that can start
        WHERE cut.flow IS NULL OR k.priority > cut.priority OR (k.priority = cut.priority AND k.id <= cut.id)
      ), flow_candidates AS (
        SELECT id, priority, flow, flow_key, key_n FROM flow_ready
        UNION ALL
        SELECT e.id, e.priority, e.flow, e.flow_key, kr.n
        FROM flow_expired AS e JOIN flow_key_room AS kr ON kr.flow = e.flow AND kr.flow_key = e.flow_key
      ), flow_admitted AS (
        -- best first, at most each key's room, then at most each limit's room
        SELECT a.id, a.priority FROM (
          SELECT b.id, b.priority, b.flow, row_number() OVER (PARTITION BY b.flow ORDER BY b.priority DESC, b.id) AS in_flow
          FROM (
            SELECT c.*, row_number() OVER (PARTITION BY c.flow, c.flow_key ORDER BY c.priority DESC, c.id) AS in_key
            FROM flow_candidates AS c
          ) AS b
          WHERE b.in_key <= b.key_n
        ) AS a
        JOIN flow_room AS r ON r.flow = a.flow
        WHERE a.in_flow <= r.n
      ), flow_keyed AS (
        -- the admitted rows, locked; one that changed since this statement's snapshot is taken only
        -- if it is still claimable (a subset of what the limits admit stays within them)
        SELECT c.id, c.priority FROM ${t} AS c
        WHERE c.id IN (SELECT id FROM flow_admitted)
          AND ((${READY}) OR (c.status = 'processing' AND c.lease_until < now() AND c.attempts < c.max_attempts))
        FOR UPDATE SKIP LOCKED
      ), flow_plain AS (
        -- a plain limit's rows (see flow_room): its best ready rows up to its room, locked as they
        -- are read (a row another claim took since this statement's snapshot is passed over, and
        -- the scan goes on), so there is nothing to rank. By key first, as the index is: an
        -- unkeyed limit's rows all have the key ''. A list looked at only in part (flow_seen) is not
        -- passed over by id: a ready row there may be listed under a lease that is over and that
        -- the claim did not look at (released, retried), and it must still be taken — its lock
        -- passes over the rows claimed since the snapshot, and its old entry stays counted as
        -- holding until a claim looks that far
        SELECT c.id, c.priority FROM flow_room AS r JOIN flow_floor AS ff ON ff.name = r.flow CROSS JOIN LATERAL (
          SELECT * FROM (${limitedReadyRanges({
            t,
            flow: sql`r.flow`,
            floor: sql`ff.floor`,
            where: sql`AND c.id NOT IN (SELECT id FROM flow_holders) ${nameFilter}`,
            columns: sql`c.id, c.priority`,
            limit: sql`greatest(r.n, 0)`,
            lock: true,
          })}
          ) AS c LIMIT greatest(r.n, 0)
        ) AS c
        WHERE r.plain AND r.n > 0
      )${stripeClaimCtes({ ...p, afterLocks: true })}, flow_taken AS (
        SELECT id, priority FROM flow_keyed UNION ALL SELECT id, priority FROM flow_plain
        UNION ALL SELECT id, priority FROM stripe_rows UNION ALL SELECT id, priority FROM stripe_expired
      )`;
}

/**
 * The claim's CTEs under limits when every served limit is expected to be kept in stripes
 * (`LeaseClaimInput.stripedOnly`): {@link limitClaimCtes} without the lists' part, which is most
 * of the statement's text and of the time PostgreSQL spends parsing and planning it. Takes rows
 * only under striped limits; a served limit kept in its list with rows to take or an expired
 * lease to take over is in `flow_active` all the same (not `striped`), which is how the claim
 * says it left one out (`LeaseClaimResult.listed`).
 */
export function stripedOnlyClaimCtes(p: LimitClaimParts): RawBuilder<unknown> {
  return sql`${flowSourceCtes(p)}${stripeClaimCtes({ ...p, afterLocks: false })}, flow_taken AS (
        SELECT id, priority FROM stripe_rows UNION ALL SELECT id, priority FROM stripe_expired
      )`;
}

/** The write CTEs of {@link stripedOnlyClaimCtes}: the stripes' own, and `flow_wait` from them. */
export function stripedOnlyWriteCtes(p: Pick<LimitClaimParts, 'table' | 'flowBatch'>): RawBuilder<unknown> {
  return sql`${stripeWriteCtes(p)}, flow_wait AS (SELECT ms FROM stripe_wait)`;
}

/**
 * The CTEs that write, per locked limit, the leases that hold its slots and the starts inside its
 * windows after this claim (`flow_written`), and compute `flow_wait`: when the earliest start of a
 * spent rate leaves its window, so that a worker wakes then instead of polling. They follow the
 * claim's UPDATE, `claimed`.
 */
export function limitWriteCtes(p: Pick<LimitClaimParts, 'table' | 'flowBatch'>): RawBuilder<unknown> {
  const lt = sql.id(p.table.schema, p.table.limitTable!);
  return sql`${stripeWriteCtes(p)}
      , flow_after AS (
        -- the starts inside a window once this claim's are added
        SELECT s.flow, s.at, s.key, s.in_rate, s.in_key_rate FROM flow_starts AS s
        UNION ALL
        SELECT l.name, k.at, cl.flow_key, l.rate IS NOT NULL, l.rate_per_key IS NOT NULL
        FROM claimed AS cl JOIN flow_limits AS l ON l.name = cl.flow CROSS JOIN flow_clock AS k
        WHERE l.rate IS NOT NULL OR l.rate_per_key IS NOT NULL
      ), flow_tat AS (
        -- the rate's meter after this claim's starts: each moves it one interval on
        SELECT l.name AS flow,
               CASE WHEN l.rate IS NULL OR n.taken = 0 THEN l.rate_tat
                    ELSE greatest(coalesce(l.rate_tat, 0), k.at) + n.taken * ${INTERVAL} END AS tat
        FROM flow_limits AS l CROSS JOIN flow_clock AS k
        CROSS JOIN LATERAL (SELECT count(*) AS taken FROM claimed AS cl WHERE cl.flow = l.name) AS n
      ), flow_lists AS (
        -- each locked limit's list after this claim: every lease not over, in the order claims
        -- listed them (see flow_need), then this claim's. An expired one whose worker's heartbeat
        -- extends it again holds its slot again, so it stays listed until it ends or this claim
        -- takes it over. Each list's three arrays come from one pass over the same rows, so their
        -- elements stay aligned; unsorted (sorting a thousand entries three times was a good part
        -- of a limited claim): the order matters only to which leases flow_freed looks at first,
        -- and the scans and appends below keep the listed ones in list order in practice.
        -- A list looked at whole (see flow_holders) is written from its holders:
        SELECT fl.name AS flow, w.ids, w.versions, w.keys
        FROM flow_limits AS fl
        CROSS JOIN LATERAL (
          SELECT coalesce(array_agg(u.id), '{}') AS ids,
                 coalesce(array_agg(u.version), '{}') AS versions,
                 coalesce(array_agg(u.key), '{}') AS keys
          FROM (SELECT h.id, h.version, h.key FROM flow_holders AS h
                WHERE h.flow = fl.name AND h.id NOT IN (SELECT id FROM claimed)
                UNION ALL
                SELECT f.id, f.version, f.key FROM flow_freed AS f
                WHERE f.flow = fl.name AND f.open AND f.id NOT IN (SELECT id FROM claimed)
                UNION ALL
                SELECT cl.id, cl.lease_version, cl.flow_key FROM claimed AS cl WHERE cl.flow = fl.name) AS u
        ) AS w
        -- a filter on the limit's row, before the list is built (as NOT EXISTS, an anti-join
        -- planned after it: a list built for nothing on every claim)
        WHERE fl.name NOT IN (SELECT flow FROM flow_seen)
        UNION ALL
        -- a list flow_freed looked at only down to flow_seen's point: its entries up to there but
        -- those over, then the rest as they are (a slice, not a pass), then this claim's
        SELECT s.flow, p.ids || l.holder_ids[s.seen + 1:] || c.ids,
               p.versions || l.holder_versions[s.seen + 1:] || c.versions,
               p.keys || l.holder_keys[s.seen + 1:] || c.keys
        FROM flow_seen AS s JOIN flow_limits AS l ON l.name = s.flow
        CROSS JOIN LATERAL (
          SELECT coalesce(array_agg(h.id), '{}') AS ids, coalesce(array_agg(h.version), '{}') AS versions,
                 coalesce(array_agg(h.key), '{}') AS keys
          FROM unnest(l.holder_ids[1:s.seen], l.holder_versions[1:s.seen], l.holder_keys[1:s.seen]) AS h(id, version, key)
          WHERE NOT EXISTS (SELECT 1 FROM flow_freed AS f WHERE f.flow = s.flow AND f.id = h.id AND f.version = h.version AND NOT f.open)
            AND h.id NOT IN (SELECT id FROM claimed)
        ) AS p
        CROSS JOIN LATERAL (
          SELECT coalesce(array_agg(cl.id), '{}') AS ids, coalesce(array_agg(cl.lease_version), '{}') AS versions,
                 coalesce(array_agg(cl.flow_key), '{}') AS keys
          FROM claimed AS cl WHERE cl.flow = s.flow
        ) AS c
      ), flow_written AS (
        UPDATE ${lt} AS l
        SET holder_ids = hold.ids, holder_versions = hold.versions, holder_keys = hold.keys,
            start_at = st.at, start_keys = st.keys, rate_tat = tat.tat
        FROM flow_limits AS fl
        JOIN flow_tat AS tat ON tat.flow = fl.name
        JOIN flow_lists AS hold ON hold.flow = fl.name
        CROSS JOIN LATERAL (
          SELECT coalesce(array_agg(a.at ORDER BY a.at, a.key), '{}') AS at, coalesce(array_agg(a.key ORDER BY a.at, a.key), '{}') AS keys
          FROM flow_after AS a WHERE a.flow = fl.name
        ) AS st
        -- unchanged bookkeeping is not written again
        WHERE l.name = fl.name
          AND (l.holder_ids IS DISTINCT FROM hold.ids OR l.holder_versions IS DISTINCT FROM hold.versions
               OR l.start_at IS DISTINCT FROM st.at OR l.rate_tat IS DISTINCT FROM tat.tat)
        RETURNING l.name
      ), flow_wait AS (
        -- when the next start may come, where a rate held rows back: per limit (and per key), the
        -- latest of the moments its spent bounds let one more start (the window's: when its
        -- earliest start leaves it; the pace's: when the clock is within the tolerance of the
        -- meter); then the soonest of those
        SELECT min(greatest(w.window_ms, w.pace_ms)) AS ms FROM (
          SELECT CASE WHEN count(*) FILTER (WHERE a.in_rate) >= l.rate
                      THEN min(a.at) FILTER (WHERE a.in_rate) + l.rate_period_ms - k.at END AS window_ms,
                 CASE WHEN tat.tat - ${TOLERANCE} > k.at THEN tat.tat - ${TOLERANCE} - k.at END AS pace_ms
          FROM flow_limits AS l CROSS JOIN flow_clock AS k JOIN flow_tat AS tat ON tat.flow = l.name
          LEFT JOIN flow_after AS a ON a.flow = l.name
          WHERE l.rate IS NOT NULL
          GROUP BY l.name, l.rate, l.rate_period_ms, k.at, tat.tat
          UNION ALL
          SELECT min(a.at) + l.rate_per_key_period_ms - k.at, NULL
          FROM flow_limits AS l CROSS JOIN flow_clock AS k JOIN flow_after AS a ON a.flow = l.name AND a.in_key_rate
          GROUP BY l.name, a.key, l.rate_per_key, l.rate_per_key_period_ms, k.at
          HAVING count(*) >= l.rate_per_key
          UNION ALL
          SELECT ms, NULL FROM stripe_wait
        ) AS w
      )`;
}
