import type pg from 'pg';
import { migrate as migrateOutbox } from '@leasehold/outbox';
import { migrateInbox } from '@leasehold/adapters-http';

/**
 * Migrations of the packages beyond core, applied to the template database. Each package adds
 * its own line here when it gains a migration line.
 */
export async function migrateAll(pool: pg.Pool): Promise<void> {
  await migrateOutbox(pool);
  await migrateInbox(pool);
}
