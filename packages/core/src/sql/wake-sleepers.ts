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
        SELECT pg_advisory_xact_lock_shared(hashtext('leasehold:wake'), hashtext(${table.channel}::text)) AS held
      )`;
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
