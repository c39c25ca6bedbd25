import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { STRIPED_FROM, STRIPES, stripeTable } from './limit-stripes.js';
import { tableRef } from './table-ref.js';
import { workerTableRef } from './task-worker-list.js';
import { PRESENCE_INTERVAL_MS } from '../worker/worker-presence.js';
import { inTransaction, type TransactionSource } from './transaction.js';

/**
 * Keeps the slots of the limits named in stripes or in a list, as their bounds say
 * (docs/flow-control.md, "How a large concurrency limit is kept"): a limit of concurrency alone of
 * at least {@link STRIPED_FROM} in {@link STRIPES} stripes, any other in its row's list — and
 * every limit in its list while a worker of an earlier version is alive (its claims read only
 * the list). Run after the limits' bounds are recorded (`limitRegisterMany`); changes nothing
 * when nothing changed.
 *
 * A change locks the limits' rows, then their stripes (as claims do: every claim of the limits
 * has ended first), and, with a snapshot that sees every claim that ended, moves the slots: into
 * stripes, each processing row given a stripe (alternately, so each stripe's rows fit its half of
 * the bound), or into the list, each processing row listed. While more rows run than the bound
 * (it was lowered), they all go in stripe 0 with the whole bound, and stripe 1 gets none: no
 * start until they are fewer than the bound, as with the list; the next start that finds them
 * fewer splits the bound again.
 */
export async function limitStripesReconcile(
  executor: Executor | TransactionSource,
  table: LeasedTable<unknown>,
  names: readonly string[],
): Promise<number> {
  if (table.limitTable === undefined || names.length === 0) return 0;
  const parts = { lt: sql.id(table.schema, table.limitTable), st: stripeTable(table), t: tableRef(table), w: workerTableRef(table) };
  const changing = await execute<{ name: string }>(executor as Executor, sql`${changeCte(parts, [...names])} SELECT name FROM change`, { prepare: false });
  if (changing.length === 0) return 0;
  const changed = changing.map((c) => c.name);
  return inTransaction(executor, async (trx) => {
    // a limit's row, then its stripes, as the claims take them: each wait is for claims that end
    await execute(trx, sql`SELECT 1 FROM ${parts.lt} WHERE name = ANY(${changed}::text[]) ORDER BY name FOR UPDATE`, { prepare: false });
    await execute(trx, sql`SELECT 1 FROM ${parts.st} WHERE name = ANY(${changed}::text[]) ORDER BY name, stripe FOR UPDATE`, { prepare: false });
    const rows = await execute<{ n: string }>(trx, reconcileStatement(parts, changed), { prepare: false });
    return Number(rows[0]?.n ?? 0);
  }, 'a limit changes how its slots are kept only while no claim of it runs');
}

interface Parts {
  readonly lt: RawBuilder<unknown>;
  readonly st: RawBuilder<unknown>;
  readonly t: RawBuilder<unknown>;
  /** The worker list (core migration 11). */
  readonly w: RawBuilder<unknown>;
}

// `change`: the named limits whose slots must move — between list and stripes, or to a new
// bound, or out of stripe 0 alone once no more run than the bound
function changeCte({ lt, st, t, w }: Parts, names: readonly string[]): RawBuilder<unknown> {
  return sql`
    WITH older AS (
      -- a live worker of an earlier version (its presence without claims_stripes, seen within
      -- three of its writes): it would read a striped limit's empty list as room for all of it
      SELECT EXISTS (SELECT 1 FROM ${w} AS w WHERE NOT w.claims_stripes
                     AND w.seen_at > now() - ${PRESENCE_INTERVAL_MS * 3}::float8 * interval '1 millisecond') AS alive
    ), want AS (
      SELECT l.name, l.concurrency, l.stripes,
             CASE WHEN l.concurrency >= ${STRIPED_FROM} AND l.concurrency_per_key IS NULL AND l.rate IS NULL
                       AND l.rate_per_key IS NULL AND NOT (SELECT alive FROM older) THEN ${STRIPES} ELSE 0 END AS k,
             (SELECT coalesce(sum(s.capacity), 0) FROM ${st} AS s WHERE s.name = l.name) AS total,
             (SELECT min(s.capacity) FROM ${st} AS s WHERE s.name = l.name) AS least,
             (SELECT count(*) FROM ${t} AS r WHERE r.flow = l.name AND r.status = 'processing') AS held
      FROM ${lt} AS l WHERE l.name = ANY(${names}::text[])
    ), change AS (
      SELECT w.*, w.k > 0 AND w.held > w.concurrency AS crowded FROM want AS w
      WHERE w.k <> w.stripes OR (w.k > 0 AND (w.total <> w.concurrency OR (w.least = 0 AND w.held <= w.concurrency)))
    )`;
}

function reconcileStatement(parts: Parts, names: readonly string[]): RawBuilder<{ n: string }> {
  const { lt, st, t } = parts;
  return sql<{ n: string }>`
    ${changeCte(parts, names)}, reslotted AS (
      -- (only flow_slot: no status change, so no trigger fires, and the leases stay as they are)
      UPDATE ${t} AS r SET flow_slot = x.slot
      FROM (SELECT r.id, CASE WHEN c.crowded THEN 0 ELSE (row_number() OVER (PARTITION BY r.flow ORDER BY r.id) - 1) % ${STRIPES} END AS slot
            FROM change AS c JOIN ${t} AS r ON r.flow = c.name AND r.status = 'processing'
            WHERE c.k > 0) AS x
      WHERE r.id = x.id AND r.status = 'processing' AND r.flow_slot IS DISTINCT FROM x.slot
      RETURNING 1
    ), stripes_gone AS (
      DELETE FROM ${st} AS s USING change AS c WHERE s.name = c.name AND c.k = 0
      RETURNING 1
    ), stripes_set AS (
      -- the bound split: stripe i gets ceil((bound - i) / k); crowded, stripe 0 gets all of it
      INSERT INTO ${st} AS s (name, stripe, capacity)
      SELECT c.name, g.stripe,
             CASE WHEN NOT c.crowded THEN (c.concurrency + c.k - 1 - g.stripe) / c.k WHEN g.stripe = 0 THEN c.concurrency ELSE 0 END
      FROM change AS c CROSS JOIN generate_series(0, ${STRIPES - 1}) AS g(stripe)
      WHERE c.k > 0
      -- (the rows were given stripes anew: each stripe is counted from id 0 again)
      ON CONFLICT (name, stripe) DO UPDATE SET capacity = EXCLUDED.capacity, claims = s.claims + 1, taken = 0, prior = NULL,
                                               low = 0, low_at = s.claims + 1
      RETURNING 1
    ), limits_set AS (
      -- into stripes, the list is emptied; out of them, every processing row is listed
      UPDATE ${lt} AS l
      SET stripes = c.k, holder_ids = h.ids, holder_versions = h.versions, holder_keys = h.keys
      FROM change AS c CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}') AS ids, coalesce(array_agg(r.lease_version ORDER BY r.id), '{}') AS versions,
               coalesce(array_agg(r.flow_key ORDER BY r.id), '{}') AS keys
        FROM ${t} AS r WHERE c.k = 0 AND r.flow = c.name AND r.status = 'processing'
      ) AS h
      WHERE l.name = c.name
      RETURNING 1
    )
    SELECT count(*) AS n FROM change`;
}
