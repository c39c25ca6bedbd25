import type { Executor } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** Which leasehold tables a schema has: a dashboard shows the outbox and schedules only where they exist. */
export interface DashboardTables {
  readonly task: boolean;
  readonly outbox: boolean;
  readonly schedule: boolean;
  /** `task_limit` (core migration 7): a schema migrated before flow control has none. */
  readonly limit: boolean;
}

/**
 * Looks the tables up by name (`to_regclass`), so a schema without the outbox answers `false`
 * instead of failing a later statement. `schema` must be validated. Takes no locks.
 */
export async function dashboardTables(executor: Executor, schema: string): Promise<DashboardTables> {
  const [row] = await execute<DashboardTables>(
    executor,
    sql`
      SELECT to_regclass(format('%I.%I', ${schema}::text, 'task')) IS NOT NULL AS task,
             to_regclass(format('%I.%I', ${schema}::text, 'outbox')) IS NOT NULL AS outbox,
             to_regclass(format('%I.%I', ${schema}::text, 'schedule')) IS NOT NULL AS schedule,
             to_regclass(format('%I.%I', ${schema}::text, 'task_limit')) IS NOT NULL AS "limit"
    `,
  );
  return { task: row!.task, outbox: row!.outbox, schedule: row!.schedule, limit: row!.limit };
}
