import { migrateInbox } from '@leasehold/adapters-http';
import { migrate } from '@leasehold/outbox';
import { sql, type Kysely } from 'kysely';
import { RECEIVER_SCHEMA, SHOP_SCHEMA } from './settings.js';
import type { DemoDatabase } from './tables.js';

/**
 * Starts from empty schemas on every run: drops the demo's two schemas, then lets leasehold
 * create its tables (outbox in the shop's schema, inbox in the receiver's) next to the demo's.
 */
export async function setUpSchemas(db: Kysely<DemoDatabase>): Promise<void> {
  await sql`DROP SCHEMA IF EXISTS ${sql.id(SHOP_SCHEMA)} CASCADE`.execute(db);
  await sql`DROP SCHEMA IF EXISTS ${sql.id(RECEIVER_SCHEMA)} CASCADE`.execute(db);
  await migrate(db, { schema: SHOP_SCHEMA });
  await migrateInbox(db, { schema: RECEIVER_SCHEMA });
  await db.schema
    .createTable(`${SHOP_SCHEMA}.orders`)
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('customer', 'text', (c) => c.notNull())
    .addColumn('total_cents', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable(`${RECEIVER_SCHEMA}.applied`)
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('worker', 'text', (c) => c.notNull())
    .addColumn('applied_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}
