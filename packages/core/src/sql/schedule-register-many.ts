import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/** One schedule as the code declares it. */
export interface ScheduleDeclaration {
  readonly name: string;
  readonly taskName: string;
  readonly cron: string;
  readonly timezone: string;
  readonly catchUp: number;
}

/**
 * Records the schedules a scheduler runs (`<schema>.schedule`): creates new ones (seen now, by
 * `owner`) and updates what the code now says of existing ones (task, cron, time zone,
 * catch-up), keeping their `last_tick`, `paused_at` and who was last seen running them (a
 * starting scheduler reads that to tell whether another one is alive). Locks those rows.
 */
export async function scheduleRegisterMany(
  executor: Executor,
  schema: string,
  owner: string,
  schedules: readonly ScheduleDeclaration[],
): Promise<void> {
  if (schedules.length === 0) return;
  await execute(
    executor,
    sql`
      INSERT INTO ${sql.id(schema, 'schedule')} AS s (name, task_name, cron, timezone, catch_up, seen_by)
      SELECT u.name, u.task_name, u.cron, u.timezone, u.catch_up, ${owner}
      FROM unnest(${schedules.map((s) => s.name)}::text[], ${schedules.map((s) => s.taskName)}::text[],
                  ${schedules.map((s) => s.cron)}::text[], ${schedules.map((s) => s.timezone)}::text[],
                  ${schedules.map((s) => s.catchUp)}::int[]) AS u(name, task_name, cron, timezone, catch_up)
      -- one order for every registering process, so two cannot deadlock on these rows
      ORDER BY u.name COLLATE "C"
      ON CONFLICT (name) DO UPDATE
      SET task_name = EXCLUDED.task_name, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone,
          catch_up = EXCLUDED.catch_up
    `,
    { prepare: false },
  );
}
