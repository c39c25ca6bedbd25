import { sql, type RawBuilder } from 'kysely';
import type { LimitClaimParts } from './lease-claim-limits.js';
import { STRIPES, STRIPES_PER_CLAIM, stripeTable } from './limit-stripes.js';
import { limitedReadyRanges } from './limited-ready.js';

/** The striped limits' part of the claim: the limits' own parts but the served names (see {@link stripeClaimCtes}). */
export interface StripeClaimParts extends Omit<LimitClaimParts, 'flows'> {
  /**
   * The claim also locks limits' rows (`flow_limits`, then `flow_clock`): the stripes are locked
   * after those, so that a claim never waits for a row lock while it holds a stripe.
   */
  readonly afterLocks: boolean;
}

/**
 * The CTEs that take rows under striped limits (docs/flow-control.md, "How a large concurrency
 * limit is kept"): limits of concurrency alone whose slots are kept in stripes instead of a list.
 * They follow `flow_active` and, in a claim that also locks limits' rows, `flow_clock` of
 * `limitClaimCtes` (so every lock a claim waits for comes first, and a claim never waits while it
 * holds a stripe), and yield `stripe_rows (id, priority, flow, stripe)`,
 * the ready rows taken, and `stripe_expired (id, priority)`, expired leases taken over, which keep
 * the slot their claim counted them in.
 *
 * Per served striped limit with rows waiting, it counts each stripe's processing rows
 * (`task_flow_held_id`, from the stripe's `low`: core migration 21), then locks the stripe with
 * the most room that no other claim holds
 * (`FOR UPDATE SKIP LOCKED`): two claims of one limit run side by side. A stripe written since
 * this statement's snapshot (the version locked is not the version read) was written by a claim
 * this count cannot see the rows of: one write behind, the count adds the rows that write took
 * (`taken`, recorded with the version it replaced, `prior`); further behind, the stripe gives
 * nothing, and `stripe_wait` asks for a claim at once.
 */
export function stripeClaimCtes(p: StripeClaimParts): RawBuilder<unknown> {
  const { t, limit, nameFilter, flowBatch } = p;
  const st = stripeTable(p.table);
  return sql`
      , stripe_seen AS (
        -- every stripe of the served striped limits with rows waiting, as this snapshot has it
        -- (counted from the stripe's low while its low_at is current: task_flow_held_id keeps an
        -- entry for every task that ran in it until vacuum can remove it; seen_low, the least id
        -- counted, is the stripe's next low)
        SELECT s.name, s.stripe, s.xmin AS seen_xmin, h.held, h.seen_low, s.capacity
        FROM ${st} AS s
        CROSS JOIN LATERAL (
          SELECT count(*) AS held, min(r.id) AS seen_low FROM ${t} AS r
          WHERE r.flow = s.name AND r.status = 'processing' AND r.flow_slot = s.stripe
            AND r.id >= CASE WHEN s.low_at = s.claims THEN s.low ELSE 0 END
        ) AS h
        WHERE s.name IN (SELECT name FROM flow_active WHERE striped AND ready)${
          p.afterLocks
            ? sql`
          -- after every limit row's lock is granted (flow_clock reads them all first)
          AND (SELECT count(*) FROM flow_clock) > 0`
            : sql``
        }
      ), stripe_locked AS (
        -- the stripes with the most room that no other claim holds, up to STRIPES_PER_CLAIM
        -- (held: the version read, or the one after it, whose claim's rows this count misses)
        SELECT s.name, s.stripe, s.xmin AS locked_xmin, s.capacity - x.held AS room, x.held IS NOT NULL AS fresh,
               s.xmin = s.seen_xmin AS whole, s.seen_low
        FROM (SELECT DISTINCT name FROM stripe_seen) AS a
        CROSS JOIN LATERAL (
          SELECT s.name, s.stripe, s.capacity, s.xmin, s.prior, s.taken, v.held AS seen_held, v.seen_xmin, v.seen_low FROM ${st} AS s
          JOIN stripe_seen AS v ON v.name = s.name AND v.stripe = s.stripe
          WHERE s.name = a.name
          ORDER BY v.capacity - v.held DESC, s.stripe
          LIMIT ${sql.lit(STRIPES_PER_CLAIM)}
          FOR UPDATE OF s SKIP LOCKED
        ) AS s
        CROSS JOIN LATERAL (
          SELECT CASE WHEN s.xmin = s.seen_xmin THEN s.seen_held WHEN s.prior = s.seen_xmin THEN s.seen_held + s.taken END AS held
        ) AS x
      ), stripe_room AS (
        -- each locked stripe's room, and where its share starts among the limit's rows (from)
        SELECT r.name, r.stripe, r.locked_xmin, r.fresh, r.whole, r.seen_low, r.n,
               coalesce(sum(r.n) OVER (PARTITION BY r.name ORDER BY r.stripe ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS from_pos
        FROM (SELECT l.name, l.stripe, l.locked_xmin, l.fresh, l.whole, l.seen_low, CASE WHEN l.fresh THEN greatest(l.room, 0) ELSE 0 END AS n
              FROM stripe_locked AS l) AS r
      ), stripe_limit_room AS (
        SELECT name, least(${flowBatch}::int, sum(n))::int AS n FROM stripe_room GROUP BY name
      ), stripe_taken AS (
        -- the limit's best ready rows up to the room of its locked stripes, locked as they are read
        -- (a row another claim took since this snapshot is passed over, and the scan goes on)
        SELECT c.id, c.priority, r.name AS flow, row_number() OVER (PARTITION BY r.name ORDER BY c.id) AS pos
        FROM stripe_limit_room AS r JOIN flow_floor AS ff ON ff.name = r.name CROSS JOIN LATERAL (
          SELECT * FROM (${limitedReadyRanges({ t, flow: sql`r.name`, floor: sql`ff.floor`, where: nameFilter, columns: sql`c.id, c.priority`, limit: sql`r.n`, lock: true })}
          ) AS c LIMIT r.n
        ) AS c
        WHERE r.n > 0
      ), stripe_rows AS (
        -- each taken row in a stripe, each stripe filled up to its room
        SELECT x.id, x.priority, x.flow, r.stripe FROM stripe_taken AS x
        JOIN stripe_room AS r ON r.name = x.flow AND x.pos > r.from_pos AND x.pos <= r.from_pos + r.n
      ), stripe_expired AS (
        -- a crashed worker's row: its slot is still counted in its stripe, so it needs no room
        SELECT c.id, c.priority FROM ${t} AS c
        WHERE c.status = 'processing' AND c.lease_until < now() ${p.expiredWindow} AND c.attempts < c.max_attempts
          -- (an array: an empty one reads nothing, where IN read the running tasks' index first)
          AND c.flow = ANY(ARRAY(SELECT name FROM flow_active WHERE striped AND lapsed)) ${nameFilter}
        ORDER BY c.lease_until, c.id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )`;
}

/**
 * The claim's `flow_slot` for a claimed row (a SET item): the stripe its limit's claim took it
 * into, or what it had (a lease taken over keeps its slot; a row under no striped limit keeps
 * a value nothing reads). The membership tests are hashed lookups, one per stripe number.
 */
export const STRIPE_SET = sql`
            flow_slot = CASE ${sql.join(
              Array.from({ length: STRIPES }, (_, i) => sql`WHEN o.id IN (SELECT id FROM stripe_rows WHERE stripe = ${sql.lit(i)}) THEN ${sql.lit(i)}::smallint`),
              sql` `,
            )} ELSE o.flow_slot END,`;

/**
 * After the claim's UPDATE: each stripe this claim took rows into is written again (see
 * stripeClaimCtes: a claim whose snapshot is older then takes nothing from it), and
 * `stripe_wait (ms)`: 0 when this claim should be followed by another at once — a stripe it
 * locked had been written since its snapshot, or it filled the stripe with the most room while
 * another stripe of the limit still had room (the next claim takes that one); null otherwise (a
 * stripe with more room was held by another claim, which takes it).
 */
export function stripeWriteCtes(p: Pick<StripeClaimParts, 'table' | 'flowBatch'>): RawBuilder<unknown> {
  const st = stripeTable(p.table);
  return sql`
      , stripe_written AS (
        -- low: the least id this claim took, and, when its count saw every row of the stripe
        -- (whole), the least id it counted; else the stripe's low, when current (the version
        -- locked follows a claim of this version). A stripe whose low is not current stays so:
        -- the next whole count sets it.
        UPDATE ${st} AS s SET claims = s.claims + 1, taken = w.taken, prior = r.locked_xmin,
          low = CASE WHEN r.whole THEN least(r.seen_low, w.low) WHEN s.low_at = s.claims THEN least(s.low, w.low) ELSE 0 END,
          low_at = CASE WHEN r.whole OR s.low_at = s.claims THEN s.claims + 1 ELSE s.low_at END
        FROM stripe_room AS r
        CROSS JOIN LATERAL (SELECT count(*) AS taken, min(c.id) AS low FROM claimed AS c JOIN stripe_rows AS x ON x.id = c.id
                            WHERE x.flow = r.name AND x.stripe = r.stripe) AS w
        WHERE s.name = r.name AND s.stripe = r.stripe AND w.taken > 0
        RETURNING 1
      ), stripe_wait AS (
        SELECT CASE WHEN EXISTS (
          SELECT 1 FROM stripe_limit_room AS r
          WHERE EXISTS (SELECT 1 FROM stripe_room AS x WHERE x.name = r.name AND NOT x.fresh)
             OR (r.n < ${p.flowBatch}::int
                 AND (SELECT count(*) FROM stripe_rows AS x WHERE x.flow = r.name) = r.n
                 -- a stripe with room it did not lock for want of a place, not for another claim's lock
                 AND EXISTS (SELECT 1 FROM stripe_seen AS v
                             WHERE v.name = r.name AND v.capacity > v.held
                               AND NOT EXISTS (SELECT 1 FROM stripe_locked AS l WHERE l.name = v.name AND l.stripe = v.stripe)
                               AND v.capacity - v.held <= (SELECT min(l.room) FROM stripe_locked AS l WHERE l.name = v.name)))
        ) THEN 0::float8 END AS ms
      )`;
}
