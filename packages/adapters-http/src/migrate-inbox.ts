import type { MigrateOptions, MigrateResult, TransactionSource } from '@leasehold/core';
import { applyMigrationLine } from '@leasehold/core/internal';
import { MIGRATIONS } from './migrate/generated-migrations.js';

/**
 * Creates or upgrades the inbox table (`<schema>.inbox`, migration line `inbox`) on the
 * receiving side's database. Idempotent and safe to run from many processes at once.
 *
 * @example
 * await migrateInbox(pool, { schema: 'app' });
 */
export async function migrateInbox(db: TransactionSource, options: MigrateOptions = {}): Promise<MigrateResult> {
  return applyMigrationLine(db, { line: 'inbox', migrations: MIGRATIONS }, options);
}
