import type { LeasedTable } from '../leased-table.js';
import type { MigrationLine } from '../migrate/migrator.js';
import type { Executor } from '../sql/execute.js';
import { schemaReadiness, type SchemaReadiness } from '../sql/schema-readiness.js';
import { DatabaseNotReadyError, describeDatabaseError, MIGRATE_HINT } from './database-not-ready-error.js';

export { describeTarget } from './database-not-ready-error.js';

/**
 * What `start()` checks before it claims: the database answers, `table` exists, and each of
 * `lines` is applied up to its last migration. Throws a {@link DatabaseNotReadyError} that says
 * what to do; `target` names the database in the message (no password).
 */
export async function checkDatabase(
  db: Executor,
  table: LeasedTable<unknown>,
  lines: readonly MigrationLine[],
  target: string,
): Promise<void> {
  let state: SchemaReadiness;
  try {
    state = await schemaReadiness(db, table.schema, table.table);
  } catch (error) {
    const { reason, text } = describeDatabaseError(error);
    // the statement's own mapping (asDatabaseNotReady) said the same without the target: keep the driver's error
    const cause = error instanceof DatabaseNotReadyError && error.cause !== undefined ? error.cause : error;
    throw new DatabaseNotReadyError(reason, `cannot use ${target}: ${text}`, { cause });
  }
  if (!state.schemaExists || !state.tableExists) {
    const what = state.schemaExists ? `has no table "${table.table}"` : 'does not exist';
    throw new DatabaseNotReadyError('not-migrated', `schema "${table.schema}" is not migrated (it ${what}) in ${target}: ${MIGRATE_HINT}`);
  }
  for (const { line, migrations } of lines) {
    const needed = Math.max(0, ...migrations.map((m) => m.version));
    const applied = state.lines.get(line) ?? 0;
    if (applied < needed) {
      throw new DatabaseNotReadyError(
        'schema-outdated',
        `schema "${table.schema}" is older than this version of leasehold (migration line "${line}" at version ${applied}, ` +
          `needs ${needed}) in ${target}: ${MIGRATE_HINT}`,
      );
    }
  }
}
