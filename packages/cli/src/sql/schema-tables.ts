import type { Executor } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** Which leasehold tables exist in a schema. */
export interface SchemaTables {
  readonly schemaExists: boolean;
  readonly task: boolean;
  readonly outbox: boolean;
  readonly inbox: boolean;
}

/**
 * Looks the tables up by name (`to_regclass`), so a schema that was never migrated answers
 * `false` instead of failing a later statement with "relation does not exist". Takes no locks.
 */
export async function schemaTables(executor: Executor, schema: string): Promise<SchemaTables> {
  const [row] = await execute<{ schema_exists: boolean; task: boolean; outbox: boolean; inbox: boolean }>(
    executor,
    sql`
      SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ${schema}) AS schema_exists,
             to_regclass(format('%I.%I', ${schema}::text, 'task')) IS NOT NULL AS task,
             to_regclass(format('%I.%I', ${schema}::text, 'outbox')) IS NOT NULL AS outbox,
             to_regclass(format('%I.%I', ${schema}::text, 'inbox')) IS NOT NULL AS inbox
    `,
  );
  return { schemaExists: row!.schema_exists, task: row!.task, outbox: row!.outbox, inbox: row!.inbox };
}
