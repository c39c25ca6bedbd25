import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { executeCached, type Executor } from './execute.js';

/**
 * How long a worker's announcement that it may sleep stays live, in ms: a sleeping worker
 * renews it every {@link WAKE_RENEW_MS}, and producers keep notifying this long after the last
 * sleeper woke.
 */
export const WAKE_TTL_MS = 3_000;
/** How often a sleeping worker renews its announcement, in ms. */
export const WAKE_RENEW_MS = 1_000;

/**
 * What arming found: `quiet` when no producer was between an insert that skipped its NOTIFY and
 * its commit (then a claim that runs after this may be the last before sleeping). Undefined: the
 * table has no `<table>_wake` sequence (an older schema): its producers notify on every insert.
 */
export type WakeArm = { readonly quiet: boolean } | undefined;

/**
 * Before a worker sleeps (core migration 5 has the protocol): sets `<table>_wake` to now + `ttlMs`
 * (or leaves a later value), then tries the table's wake lock exclusively and lets it go at once.
 * The two happen in this order (the setval in a subquery that is run first), so that a producer
 * that read the sequence before it was set holds the lock by then. The caller must claim again in
 * a later statement, whose snapshot shows every producer that committed before the try.
 *
 * Locks: the wake lock, for the length of this statement; the sequence is written in place.
 */
export async function leaseWakeArm(executor: Executor, table: LeasedTable<unknown>, ttlMs: number): Promise<WakeArm> {
  const rows = await executeCached(
    executor,
    'leaseWakeArm',
    (v: { schema: string; wake: string; channel: string; ttlMs: number }) => sql<{ quiet: boolean }>`
      SELECT pg_try_advisory_xact_lock(hashtext('leasehold:wake'), hashtext(${v.channel})) AS quiet
      FROM (SELECT setval(s.seq, greatest(coalesce(pg_sequence_last_value(s.seq), 0),
                                          (date_part('epoch', clock_timestamp()) * 1000)::bigint + ${v.ttlMs}::bigint)) AS until
            FROM (SELECT to_regclass(format('%I.%I', ${v.schema}::text, ${v.wake}::text)) AS seq) AS s
            WHERE s.seq IS NOT NULL
            -- a fence for the planner: the setval runs before the lock is tried
            OFFSET 0) AS armed
    `,
    { schema: table.schema, wake: `${table.table}_wake`, channel: table.channel, ttlMs },
  );
  const row = rows[0];
  return row === undefined ? undefined : { quiet: row.quiet };
}

/**
 * While a worker sleeps: moves `<table>_wake` to now + `ttlMs` (or leaves a later value).
 * Returns false when it had lapsed meanwhile (the worker slept past its announcement, e.g. a
 * stalled process): producers may have skipped their NOTIFY since, so the worker must arm and
 * claim again before it sleeps on.
 */
export async function leaseWakeRenew(executor: Executor, table: LeasedTable<unknown>, ttlMs: number): Promise<boolean> {
  const rows = await executeCached(
    executor,
    'leaseWakeRenew',
    (v: { schema: string; wake: string; ttlMs: number }) => sql<{ live: boolean }>`
      SELECT setval(s.seq, greatest(s.last, s.now + ${v.ttlMs}::bigint)) AS until, s.last > s.now AS live
      FROM (SELECT seq, coalesce(pg_sequence_last_value(seq), 0) AS last, (date_part('epoch', clock_timestamp()) * 1000)::bigint AS now
            FROM to_regclass(format('%I.%I', ${v.schema}::text, ${v.wake}::text)) AS seq
            WHERE seq IS NOT NULL OFFSET 0) AS s
    `,
    { schema: table.schema, wake: `${table.table}_wake`, ttlMs },
  );
  return rows[0]?.live ?? false;
}
