import { sql } from 'kysely';
import { validateIdentifier } from '../identifier.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { execute } from '../sql/execute.js';
import { withTransaction, type TransactionSource } from '../sql/transaction.js';
import { MIGRATIONS } from './generated-migrations.js';
import type { Migration } from './migration.js';

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /** Schema to create the tables in. @defaultValue 'leasehold' */
  schema?: string;
}

/** A migration line: a package's own numbered migrations. */
export interface MigrationLine {
  /** Name recorded in the migrations table, e.g. `core`, `outbox`. */
  readonly line: string;
  readonly migrations: readonly Migration[];
}

/** What a migrate call applied. */
export interface MigrateResult {
  readonly schema: string;
  /** `line:version` of each migration applied by this call; empty when already current. */
  readonly applied: string[];
}

/**
 * Creates or upgrades core's tables in `schema`. Idempotent, and safe when many processes call
 * it at once: each migration runs in its own transaction under a schema-wide advisory lock and
 * is recorded in `<schema>.leasehold_migration`.
 *
 * @example
 * await migrate(pool, { schema: 'jobs' });
 */
export async function migrate(db: TransactionSource, options: MigrateOptions = {}): Promise<MigrateResult> {
  return applyMigrationLine(db, { line: 'core', migrations: MIGRATIONS }, options);
}

const MIGRATE_OPTIONS = optionKeys<MigrateOptions>()('migrate', ['schema']);

/** Applies one package's migration line; used by `migrate` of every leasehold package. */
export async function applyMigrationLine(
  db: TransactionSource,
  { line, migrations }: MigrationLine,
  options: MigrateOptions = {},
): Promise<MigrateResult> {
  checkOptionKeys(options, MIGRATE_OPTIONS, '', `migrate (${line})`);
  const schema = validateIdentifier(options.schema ?? 'leasehold', 'schema');
  const applied: string[] = [];
  for (const migration of migrations) {
    const didApply = await withTransaction(db, async (trx) => {
      // serialises every migrator of this schema, including the CREATE SCHEMA below
      await execute(trx, sql`SELECT pg_advisory_xact_lock(hashtext(${`leasehold:migrate:${schema}`}))`);
      await execute(trx, sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`);
      await execute(
        trx,
        sql`CREATE TABLE IF NOT EXISTS ${sql.id(schema, 'leasehold_migration')} (
              line text NOT NULL,
              version integer NOT NULL,
              name text NOT NULL,
              applied_at timestamptz NOT NULL DEFAULT now(),
              PRIMARY KEY (line, version))`,
      );
      const done = await execute(
        trx,
        sql`SELECT 1 FROM ${sql.id(schema, 'leasehold_migration')} WHERE line = ${line} AND version = ${migration.version}`,
      );
      if (done.length > 0) return false;
      // :SCHEMA is replaced by a validated identifier, quoted
      await execute(trx, sql.raw(migration.sql.replaceAll(':SCHEMA', `"${schema}"`)));
      await execute(
        trx,
        sql`INSERT INTO ${sql.id(schema, 'leasehold_migration')} (line, version, name)
            VALUES (${line}, ${migration.version}, ${migration.name})`,
      );
      return true;
    });
    if (didApply) applied.push(`${line}:${migration.version}`);
  }
  return { schema, applied };
}
