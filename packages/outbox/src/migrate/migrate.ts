import { applyMigrationLine, migrate as migrateCore, type MigrateOptions, type MigrateResult } from '@leasehold/core';
import type { TransactionSource } from '@leasehold/core';
import { MIGRATIONS } from './generated-migrations.js';

/**
 * Creates or upgrades the outbox table in `schema`: core's migration line first (the outbox
 * uses its `notify_inserted()` trigger function), then the outbox's own line `outbox`.
 * Idempotent and safe to run from many processes at once.
 *
 * @example
 * import { migrate } from '@leasehold/outbox';
 * await migrate(pool, { schema: 'leasehold' });
 */
export async function migrate(db: TransactionSource, options: MigrateOptions = {}): Promise<MigrateResult> {
  const core = await migrateCore(db, options);
  const outbox = await applyMigrationLine(db, { line: 'outbox', migrations: MIGRATIONS }, options);
  return { schema: outbox.schema, applied: [...core.applied, ...outbox.applied] };
}
