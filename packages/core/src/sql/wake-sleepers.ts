import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';

/**
 * The wake protocol (core migration 5) for statements other than INSERTs, whose trigger does it:
 * a writer of ordering groups (see `leaseLockGroups`), one that makes rows claimable (a retried
 * dead row), or one that locks rows a claim could take without changing that (a waiter marking a
 * pending task, a signal to it, a finishing child locking its parent). A claim passes over a locked row (SKIP LOCKED), so a worker whose last
 * claim before sleeping met the lock would otherwise sleep until its poll interval while the row
 * waits: nothing else tells it when the lock goes.
 *
 * Such a statement joins this CTE (`CROSS JOIN wake`) where it reaches its rows: the table's wake
 * lock, taken shared until the transaction ends, keeps a worker about to sleep from doing so
 * (its arm finds the lock held and claims again shortly). Then {@link notifySleepers}, read after
 * the lock, tells a worker that armed before it to claim again once this commits.
 * @internal
 */
export function wakeLockCte(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql`wake AS MATERIALIZED (
        SELECT ${wakeLockShared(table)} AS held
      )`;
}

/** The table's wake lock, taken shared until the transaction ends (the key a sleeping worker tries exclusively). */
function wakeLockShared(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql`pg_advisory_xact_lock_shared(hashtext('leasehold:wake'), hashtext(${table.channel}::text))`;
}

/**
 * A SQL condition: some worker of the table may be asleep now (`<table>_wake` is live; a table
 * without one, of an older schema, always). Read it after taking {@link wakeLockCte}'s lock.
 * @internal
 */
export function sleeperMayBeAsleep(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql`(SELECT s IS NULL OR coalesce(pg_sequence_last_value(s), 0) > date_part('epoch', clock_timestamp()) * 1000
             FROM to_regclass(format('%I.%I', ${table.schema}::text, ${`${table.table}_wake`}::text)) AS s)`;
}

/**
 * A SQL expression, for a row the statement reaches after taking {@link wakeLockCte}'s lock:
 * NOTIFYs the table's channel (sent at commit; one per transaction however many rows) when `when`
 * holds for the row and {@link sleeperMayBeAsleep}. Null.
 * @internal
 */
export function notifySleepers(table: LeasedTable<unknown>, when: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`CASE WHEN ${when} AND ${sleeperMayBeAsleep(table)} THEN pg_notify(${table.channel}::text, '') END`;
}

/**
 * CTEs for a write that ends rows under limits: what the slot-freed trigger's function
 * (`notify_inserted`) does, done once before the write's UPDATE reaches a row — the wake lock
 * taken shared, a NOTIFY while a worker may be asleep, and the table's channel recorded in
 * `leasehold.notify_seen` as the function records it, so that the trigger's WHEN (core migration
 * 22) passes over every row instead of calling the function for each. Nothing when this
 * transaction did that already. The UPDATE must read `wake_once` in its WHERE
 * ({@link WAKE_ONCE_FIRST}), which makes it run before the first row is written.
 * @internal
 */
export function wakeOnceCtes(table: LeasedTable<unknown>): RawBuilder<unknown> {
  const entry = sql`(E'\\n' || ${table.channel}::text || E'\\n')`;
  return sql`wake_lock AS MATERIALIZED (
        SELECT ${wakeLockShared(table)} AS held,
               set_config('leasehold.notify_seen',
                          coalesce(nullif(current_setting('leasehold.notify_seen', true), ''), E'\\n') || ${table.channel}::text || E'\\n', true) AS seen
        WHERE strpos(coalesce(current_setting('leasehold.notify_seen', true), ''), ${entry}) = 0
      ), wake_once AS MATERIALIZED (
        SELECT ${notifySleepers(table, sql`true`)} AS woke FROM wake_lock
      )`;
}

/** The condition an UPDATE after {@link wakeOnceCtes} adds to its WHERE: a one-time filter, read first. */
export const WAKE_ONCE_FIRST = sql`(SELECT count(*) FROM wake_once) >= 0`;
