import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/**
 * Pauses (`paused: true`) or resumes schedules by name; returns the names it changed. Ticks that
 * come due while a schedule is paused are skipped, never caught up: resuming moves `last_tick`
 * to now. Pausing a paused schedule or resuming a running one changes nothing. Locks the rows.
 */
export async function scheduleSetPaused(executor: Executor, schema: string, names: readonly string[], paused: boolean): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await execute<{ name: string }>(
    executor,
    paused
      ? sql`UPDATE ${sql.id(schema, 'schedule')} SET paused_at = now()
            WHERE name = ANY(${[...names]}::text[]) AND paused_at IS NULL RETURNING name`
      : sql`UPDATE ${sql.id(schema, 'schedule')} SET paused_at = NULL, last_tick = greatest(last_tick, now())
            WHERE name = ANY(${[...names]}::text[]) AND paused_at IS NOT NULL RETURNING name`,
  );
  return rows.map((r) => r.name).sort();
}
