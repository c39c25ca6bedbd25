import { sql } from 'kysely';
import { taskTable } from '../leased-table.js';
import { execute, type Executor } from '../sql/execute.js';
import { tableRef } from '../sql/table-ref.js';
import type { TaskDefinition } from '../task/define-task.js';

/** A task found by {@link expectTaskEnqueued}. */
export interface EnqueuedTaskRow<P> {
  readonly id: string;
  readonly payload: P;
  readonly priority: number;
  readonly groupKey: string | null;
  readonly dedupKey: string | null;
}

/**
 * For users' tests: asserts that a pending task of `task`'s type whose payload contains `match`
 * (jsonb `@>`) exists, and returns it; throws a readable error otherwise. Pass the test's
 * transaction to see tasks it has not committed.
 *
 * @example
 * await signUp(db, 'ada@example.com');
 * await expectTaskEnqueued(db, sendWelcome, { to: 'ada@example.com' });
 */
export async function expectTaskEnqueued<P>(
  executor: Executor,
  task: TaskDefinition<P>,
  match: Partial<P> = {},
  options: { schema?: string } = {},
): Promise<EnqueuedTaskRow<P>> {
  const rows = await execute<{ id: string; payload: P; priority: number; group_key: string | null; dedup_key: string | null }>(
    executor,
    sql`SELECT id, payload, priority, group_key, dedup_key FROM ${tableRef(taskTable(options.schema))}
        WHERE name = ${task.name} AND status = 'pending' AND payload @> ${JSON.stringify(match)}::jsonb
        ORDER BY id LIMIT 1`,
  );
  const row = rows[0];
  if (!row) {
    throw new Error(`expected a pending "${task.name}" task with payload containing ${JSON.stringify(match)}, found none`);
  }
  return { id: String(row.id), payload: row.payload, priority: row.priority, groupKey: row.group_key, dedupKey: row.dedup_key };
}
