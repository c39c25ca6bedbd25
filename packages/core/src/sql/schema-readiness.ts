import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';

/** What {@link schemaReadiness} found. */
export interface SchemaReadiness {
  readonly schemaExists: boolean;
  readonly tableExists: boolean;
  /** Highest version applied per migration line (`core`, `outbox`, …); empty when none recorded. */
  readonly lines: ReadonlyMap<string, number>;
}

/**
 * Whether `schema` and its `table` exist, and how far each migration line was applied there.
 * Looks tables up by name (`to_regclass`), so an unmigrated schema answers instead of failing
 * with "relation does not exist"; reads `leasehold_migration` only when it exists. Two
 * statements, no locks. `schema` and `table` must be validated identifiers.
 */
export async function schemaReadiness(executor: Executor, schema: string, table: string): Promise<SchemaReadiness> {
  const [found] = await execute<{ schema_exists: boolean; table_exists: boolean; recorded: boolean }>(
    executor,
    sql`
      SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ${schema}) AS schema_exists,
             to_regclass(format('%I.%I', ${schema}::text, ${table}::text)) IS NOT NULL AS table_exists,
             to_regclass(format('%I.%I', ${schema}::text, 'leasehold_migration')) IS NOT NULL AS recorded
    `,
  );
  const lines = new Map<string, number>();
  if (found?.recorded) {
    const rows = await execute<{ line: string; version: number }>(
      executor,
      sql`SELECT line, max(version)::int AS version FROM ${sql.id(schema, 'leasehold_migration')} GROUP BY line`,
    );
    for (const row of rows) lines.set(row.line, row.version);
  }
  return { schemaExists: found?.schema_exists ?? false, tableExists: found?.table_exists ?? false, lines };
}
