import { sql } from 'kysely';
import type { Rate } from '../limits/define-limit.js';
import { execute, type Executor } from './execute.js';
import { statusIs } from './fence.js';

/** One limit as stored, with what it holds now: what `leasehold stats` shows. */
export interface LimitRow {
  readonly name: string;
  /** The task names that declared it at the latest worker start. */
  readonly taskNames: readonly string[];
  readonly concurrency: number | null;
  readonly concurrencyPerKey: number | null;
  readonly rate: Rate | null;
  readonly ratePerKey: Rate | null;
  /** Leases holding a slot now (running tasks under it). */
  readonly running: number;
  /** Keys with a running task now. */
  readonly runningKeys: number;
  /** Starts inside the rate's window now (0 without a rate). */
  readonly startsInWindow: number;
  /** Pending tasks under it (due now or later). */
  readonly waiting: number;
  /** When a worker last declared it, and which: a limit removed from the code stops being seen. */
  readonly seenAt: Date;
  readonly seenBy: string | null;
}

/**
 * Every limit of `schema`'s task table, by name, with its running leases and the starts in its
 * window as the claims keep them (a lease counts while it runs: its row is processing under the
 * claim's token and the lease has not expired), and its pending tasks. Takes no locks; reads the
 * limit's pending rows, the table's blocked ones and its holders' rows, never the finished ones.
 */
export async function limitList(executor: Executor, schema = 'leasehold'): Promise<LimitRow[]> {
  const lt = sql.id(schema, 'task_limit');
  const t = sql.id(schema, 'task');
  const st = sql.id(schema, 'task_limit_stripe');
  const rows = await execute<{
    name: string; task_names: string[]; concurrency: number | null; concurrency_per_key: number | null;
    rate: number | null; rate_period_ms: string | null; rate_per_key: number | null; rate_per_key_period_ms: string | null;
    running: string; running_keys: string; starts: string; waiting: string; seen_at: Date; seen_by: string | null;
  }>(
    executor,
    sql`
      SELECT l.name, l.task_names, l.concurrency, l.concurrency_per_key, l.rate, l.rate_period_ms, l.rate_per_key,
             l.rate_per_key_period_ms, l.seen_at, l.seen_by, listed.running + striped.running AS running,
             listed.running_keys + striped.running_keys AS running_keys,
             (SELECT count(*) FROM unnest(l.start_at) AS s(at)
              WHERE s.at > date_part('epoch', clock_timestamp()) * 1000 - l.rate_period_ms) AS starts,
             -- counted through the limit's own indexes (ready, and scheduled for later), then the
             -- blocked rows': flow and status alone match no index, so each limit cost a scan of
             -- the whole table, its finished history included
             (SELECT count(*) FROM ${t} AS w WHERE w.flow = l.name AND w.status = 'pending' AND NOT w.blocked AND NOT w.scheduled)
             + (SELECT count(*) FROM ${t} AS w WHERE w.flow = l.name AND w.status = 'pending' AND w.scheduled AND NOT w.blocked)
             + (SELECT count(*) FROM ${t} AS w WHERE w.blocked AND w.flow = l.name AND w.status = 'pending') AS waiting
      FROM ${lt} AS l
      CROSS JOIN LATERAL (
        SELECT count(*) AS running, count(DISTINCT h.key) AS running_keys
        FROM unnest(l.holder_ids, l.holder_versions, l.holder_keys) AS h(id, version, key)
        -- each holder by primary key (a scalar subquery, and see statusIs): joined, the planner
        -- could hash every processing row of the table
        WHERE l.stripes = 0
          AND (SELECT r.lease_version = h.version AND ${statusIs('r', 'processing')} AND r.lease_until >= now()
               FROM ${t} AS r WHERE r.id = h.id)
      ) AS listed
      CROSS JOIN LATERAL (
        -- a striped limit's slots are held by its processing rows, each stripe's read as the claim
        -- counts them (task_flow_held_id, from the stripe's low while it is current: migration
        -- 21); OFFSET 0 keeps the lease's test out of that scan
        SELECT count(*) AS running, count(DISTINCT r.flow_key) AS running_keys
        FROM ${st} AS s CROSS JOIN LATERAL (
          SELECT r.lease_until, r.flow_key FROM ${t} AS r
          WHERE r.flow = s.name AND r.flow_slot = s.stripe AND r.status = 'processing'
            AND r.id >= CASE WHEN s.low_at = s.claims THEN s.low ELSE 0 END OFFSET 0
        ) AS r
        WHERE l.stripes > 0 AND s.name = l.name AND r.lease_until >= now()
      ) AS striped
      ORDER BY l.name
    `,
  );
  const rate = (limit: number | null, periodMs: string | null): Rate | null =>
    limit === null || periodMs === null ? null : { limit, periodMs: Number(periodMs) };
  return rows.map((r) => ({
    name: r.name,
    taskNames: r.task_names,
    concurrency: r.concurrency,
    concurrencyPerKey: r.concurrency_per_key,
    rate: rate(r.rate, r.rate_period_ms),
    ratePerKey: rate(r.rate_per_key, r.rate_per_key_period_ms),
    running: Number(r.running),
    runningKeys: Number(r.running_keys),
    startsInWindow: Number(r.starts),
    waiting: Number(r.waiting),
    seenAt: r.seen_at,
    seenBy: r.seen_by,
  }));
}
