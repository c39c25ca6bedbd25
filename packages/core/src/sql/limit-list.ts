import { sql } from 'kysely';
import type { Rate } from '../limits/define-limit.js';
import { execute, type Executor } from './execute.js';

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
 * claim's token and the lease has not expired), and its pending tasks. Takes no locks; the
 * pending count reads the limit's pending rows.
 */
export async function limitList(executor: Executor, schema = 'leasehold'): Promise<LimitRow[]> {
  const lt = sql.id(schema, 'task_limit');
  const t = sql.id(schema, 'task');
  const rows = await execute<{
    name: string; task_names: string[]; concurrency: number | null; concurrency_per_key: number | null;
    rate: number | null; rate_period_ms: string | null; rate_per_key: number | null; rate_per_key_period_ms: string | null;
    running: string; running_keys: string; starts: string; waiting: string; seen_at: Date; seen_by: string | null;
  }>(
    executor,
    sql`
      SELECT l.name, l.task_names, l.concurrency, l.concurrency_per_key, l.rate, l.rate_period_ms, l.rate_per_key,
             l.rate_per_key_period_ms, l.seen_at, l.seen_by, held.running, held.running_keys,
             (SELECT count(*) FROM unnest(l.start_at) AS s(at)
              WHERE s.at > date_part('epoch', clock_timestamp()) * 1000 - l.rate_period_ms) AS starts,
             (SELECT count(*) FROM ${t} AS w WHERE w.flow = l.name AND w.status = 'pending') AS waiting
      FROM ${lt} AS l
      CROSS JOIN LATERAL (
        SELECT count(*) AS running, count(DISTINCT h.key) AS running_keys
        FROM unnest(l.holder_ids, l.holder_versions, l.holder_keys) AS h(id, version, key)
        JOIN ${t} AS r ON r.id = h.id AND r.lease_version = h.version AND r.status = 'processing' AND r.lease_until >= now()
      ) AS held
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
