import pg from 'pg';
import { Kysely, PostgresDialect, type Generated } from 'kysely';
import { createWorker, defineTask, enqueue, migrate } from '@leasehold/core';

// the application's own table, as Kysely sees it
interface Database {
  app_user: { id: Generated<string>; email: string };
}

const sendWelcome = defineTask<{ userId: string; email: string }>('send-welcome', {
  lease: '30s',
  // runs outside any transaction; ctx.task.id stays the same across retries, so it is the
  // idempotency key to give your mail provider
  handler: async ({ userId, email }, ctx) => {
    console.log(`sending the welcome mail to ${email} (user ${userId}, idempotency key ${ctx.task.id})`);
  },
});

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await migrate(pool); // creates the leasehold.task table; idempotent, safe from many processes
  await db.schema
    .createTable('app_user')
    .ifNotExists()
    .addColumn('id', 'bigint', (col) => col.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('email', 'text', (col) => col.notNull())
    .execute();

  const worker = createWorker({ pool, tasks: [sendWelcome], concurrency: 8 });
  await worker.start();
  // signals are the application's: finish the running tasks, then close the pool
  const shutdown = async () => {
    await worker.stop({ timeout: '30s' });
    await db.destroy(); // ends the pool too
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());

  // e.g. in a request handler: the task commits or rolls back together with the user
  const email = 'ada@example.com';
  await db.transaction().execute(async (trx) => {
    const user = await trx.insertInto('app_user').values({ email }).returning('id').executeTakeFirstOrThrow();
    await enqueue(trx, sendWelcome, { userId: user.id, email });
  });
  console.log('worker running; Ctrl-C stops it');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
