import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/** A schedule's row as its firer reads it, under its lock. */
export interface ScheduleState {
  /** The latest tick fired or skipped, or null before the first. */
  readonly lastTick: Date | null;
  readonly paused: boolean;
  readonly createdAt: Date;
  /** Which scheduler last declared itself running this schedule. */
  readonly seenBy: string | null;
  /** Whether that scheduler is alive: its heartbeat is not older than its promise. */
  readonly alive: boolean;
  /** The database's clock, at this statement. */
  readonly now: Date;
}

/**
 * Locks a schedule's row until the caller's transaction ends and reads it, or returns null when
 * there is no such schedule. Every firer of the schedule goes through this lock, so a tick is
 * decided once: the next firer waits, then sees the `last_tick` the first one wrote.
 * Must run inside a transaction.
 */
export async function scheduleLock(executor: Executor, schema: string, name: string): Promise<ScheduleState | null> {
  const [row] = await execute<{ last_tick: Date | null; paused: boolean; created_at: Date; seen_by: string | null; alive: boolean; now: Date }>(
    executor,
    sql`
      SELECT last_tick, paused_at IS NOT NULL AS paused, created_at, seen_by,
             coalesce(alive_until > now(), false) AS alive, now() AS now
      FROM ${sql.id(schema, 'schedule')} WHERE name = ${name}
      FOR UPDATE
    `,
  );
  if (row === undefined) return null;
  return { lastTick: row.last_tick, paused: row.paused, createdAt: row.created_at, seenBy: row.seen_by, alive: row.alive, now: row.now };
}
