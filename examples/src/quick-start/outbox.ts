import pg from 'pg';
import { Kysely, PostgresDialect, type Generated } from 'kysely';
import { createDispatcher, createOutbox, migrate, type Publisher } from '@leasehold/outbox';

interface Database {
  app_order: { id: Generated<string>; total_cents: number };
}

// the boundary to your broker or API; @leasehold/adapters-http has one for webhooks
const publisher: Publisher = {
  async publish(message) {
    // message.id stays the same across redeliveries: the receiver deduplicates on it
    console.log(`publishing ${message.eventType} for ${message.aggregateType} ${message.key} (message id ${message.id})`);
  },
};

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // @leasehold/outbox's migrate creates core's task table and the leasehold.outbox table
  // (@leasehold/core's migrate creates only the former)
  await migrate(pool);
  await db.schema
    .createTable('app_order')
    .ifNotExists()
    .addColumn('id', 'bigint', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('total_cents', 'integer', (col) => col.notNull())
    .execute();

  const dispatcher = createDispatcher({ pool, publisher });
  await dispatcher.start();
  const shutdown = async () => {
    await dispatcher.stop({ timeout: '10s' });
    await db.destroy(); // ends the pool too
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());

  // the event is recorded in the same transaction as the change it describes
  const outbox = createOutbox({ orderedEventTypes: ['OrderPlaced'] });
  await db.transaction().execute(async (trx) => {
    const order = await trx.insertInto('app_order').values({ total_cents: 4200 }).returning('id').executeTakeFirstOrThrow();
    await outbox.add(trx, { aggregateType: 'order', aggregateId: order.id, eventType: 'OrderPlaced', payload: { totalCents: 4200 } });
  });
  console.log('dispatcher running; Ctrl-C stops it');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
