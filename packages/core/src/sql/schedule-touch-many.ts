import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/**
 * A running scheduler's heartbeat: marks its schedules seen now, by `owner`, and alive for
 * `aliveMs` more (`aliveMs` 0: it is stopping, and only where it was the last one seen). A
 * scheduler that starts while another is alive leaves the due ticks to it; a schedule nobody
 * declares any more stops being seen. Locks those rows, briefly.
 */
export async function scheduleTouchMany(executor: Executor, schema: string, owner: string, names: readonly string[], aliveMs: number): Promise<void> {
  if (names.length === 0) return;
  await execute(
    executor,
    aliveMs > 0
      ? sql`UPDATE ${sql.id(schema, 'schedule')}
            SET seen_at = now(), seen_by = ${owner}, alive_until = now() + ${aliveMs} * interval '1 millisecond'
            WHERE name = ANY(${[...names]}::text[])`
      : sql`UPDATE ${sql.id(schema, 'schedule')} SET alive_until = now()
            WHERE name = ANY(${[...names]}::text[]) AND seen_by = ${owner}`,
  );
}
