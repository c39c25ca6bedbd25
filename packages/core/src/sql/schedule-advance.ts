import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/**
 * Records that every tick of a schedule up to `tick` was fired or skipped, and that `owner`
 * runs it. Call it under the row's lock (`scheduleLock`), in the transaction that enqueued the
 * ticks' tasks, so the tasks and the new `last_tick` commit together.
 */
export async function scheduleAdvance(executor: Executor, schema: string, name: string, tick: Date | null, owner: string, aliveMs: number): Promise<void> {
  await execute(
    executor,
    sql`
      UPDATE ${sql.id(schema, 'schedule')}
      SET last_tick = coalesce(${tick}::timestamptz, last_tick), seen_at = now(), seen_by = ${owner},
          alive_until = now() + ${aliveMs} * interval '1 millisecond'
      WHERE name = ${name}
    `,
  );
}
