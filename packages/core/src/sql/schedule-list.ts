import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/** One schedule as stored: what `leasehold schedules` shows. */
export interface ScheduleRow {
  readonly name: string;
  readonly taskName: string;
  readonly cron: string;
  readonly timezone: string;
  readonly catchUp: number;
  /** The latest tick fired or skipped, or null before the first. */
  readonly lastTick: Date | null;
  /** When a person paused it, or null while it runs. */
  readonly pausedAt: Date | null;
  readonly createdAt: Date;
  /** When a worker last declared it: a schedule removed from the code stops being seen. */
  readonly seenAt: Date;
  readonly seenBy: string | null;
  /** Whether a running scheduler runs it now (its heartbeat is current). */
  readonly alive: boolean;
}

/** Every schedule of `schema`, by name. Takes no locks. */
export async function scheduleList(executor: Executor, schema: string): Promise<ScheduleRow[]> {
  const rows = await execute<{
    name: string; task_name: string; cron: string; timezone: string; catch_up: number;
    last_tick: Date | null; paused_at: Date | null; created_at: Date; seen_at: Date; seen_by: string | null; alive: boolean;
  }>(executor, sql`SELECT *, coalesce(alive_until > now(), false) AS alive FROM ${sql.id(schema, 'schedule')} ORDER BY name`);
  return rows.map((r) => ({
    name: r.name,
    taskName: r.task_name,
    cron: r.cron,
    timezone: r.timezone,
    catchUp: r.catch_up,
    lastTick: r.last_tick,
    pausedAt: r.paused_at,
    createdAt: r.created_at,
    seenAt: r.seen_at,
    seenBy: r.seen_by,
    alive: r.alive,
  }));
}
