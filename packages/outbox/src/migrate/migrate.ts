import {
  migrate as migrateCore,
  type MigrateOptions,
  type MigrateResult,
  type PgPoolLike,
  type TransactionSource,
} from '@leasehold/core';
import { applyMigrationLine } from '@leasehold/core/internal';
import type { Kysely } from 'kysely';
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
export async function migrate<DB>(db: Kysely<DB> | PgPoolLike, options: MigrateOptions = {}): Promise<MigrateResult> {
  // any Kysely instance will do, whatever its table types; core's type names only Kysely<object>
  const source = db as unknown as TransactionSource;
  const core = await migrateCore(source, options);
  const outbox = await applyMigrationLine(source, { line: 'outbox', migrations: MIGRATIONS }, options);
  return { schema: outbox.schema, applied: [...core.applied, ...outbox.applied] };
}
