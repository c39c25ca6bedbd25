// Enqueue from an HTTP request handler inside the app's own transaction (Kysely, node:http).
// The program starts the app and a worker, sends a few signups to it (one with a taken email,
// one that fails after enqueueing), and checks that exactly the committed users got an email.
//   npm run http-enqueue -w @leasehold/examples   (DATABASE_URL, or a throwaway server when unset)
import type { AddressInfo } from 'node:net';
import { createWorker, migrate } from '@leasehold/core';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { openDatabase } from '../shared/database.js';
import { createPool } from '../shared/pool.js';
import { shutdownSignal } from '../shared/shutdown.js';
import { createApp, defineWelcomeEmail, SCHEMA, type AppDatabase } from './app.js';

const signal = shutdownSignal();
const database = await openDatabase(signal);
const pool = createPool(database.url, 6);
const db = new Kysely<AppDatabase>({ dialect: new PostgresDialect({ pool }) });
let code = 1;
try {
  await sql`DROP SCHEMA IF EXISTS ${sql.id(SCHEMA)} CASCADE`.execute(db);
  await migrate(pool, { schema: SCHEMA });
  await sql`CREATE TABLE http_enqueue_example.app_user (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text UNIQUE NOT NULL, name text NOT NULL)`.execute(db);
  await sql`CREATE TABLE http_enqueue_example.sent_email (user_id bigint NOT NULL, task_id bigint NOT NULL, "to" text NOT NULL)`.execute(db);

  const welcomeEmail = defineWelcomeEmail(db);
  const worker = createWorker({ pool, schema: SCHEMA, tasks: [welcomeEmail], pollInterval: '200ms' });
  worker.on('task:succeeded', ({ task }) => console.log(`worker: sent welcome email for task #${task.id}`));
  await worker.start();
  const app = createApp(db, welcomeEmail);
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  console.log(`app: listening on ${base}`);

  const signups: Array<[string, { email: string; name: string }, number]> = [
    ['/signup', { email: 'ada@example.com', name: 'Ada' }, 201],
    ['/signup', { email: 'alan@example.com', name: 'Alan' }, 201],
    ['/signup', { email: 'ada@example.com', name: 'Ada again' }, 409], // rolled back: no second email
    ['/signup?fail=after-enqueue', { email: 'grace@example.com', name: 'Grace' }, 500], // rolled back, task included
    ['/signup', { email: 'edsger@example.com', name: 'Edsger' }, 201],
  ];
  let answersOk = true;
  for (const [path, body, expected] of signups) {
    const res = await fetch(base + path, { method: 'POST', body: JSON.stringify(body), signal });
    console.log(`POST ${path} ${body.email} -> ${res.status} ${await res.text()}`);
    answersOk &&= res.status === expected;
  }

  const deadline = Date.now() + 30_000;
  while ((await pendingTasks(db)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await worker.stop({ timeout: '5s' });
  await new Promise((resolve) => app.close(resolve));
  code = answersOk && (await check(db)) ? 0 : 1;
} catch (error) {
  code = signal.aborted ? 130 : 1;
  if (!signal.aborted) console.error('example failed:', error);
} finally {
  await db.destroy();
  await database.close();
}
process.exit(code);

async function pendingTasks(kysely: Kysely<AppDatabase>): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT count(*) AS n FROM http_enqueue_example.task WHERE status IN ('pending', 'processing')`.execute(kysely);
  return Number(rows[0]!.n);
}

/** Every committed user got exactly one email; nobody else did. */
async function check(kysely: Kysely<AppDatabase>): Promise<boolean> {
  const { rows } = await sql<{ users: string[]; emailed: string[]; tasks: string }>`
    SELECT (SELECT coalesce(array_agg(email ORDER BY email), '{}') FROM http_enqueue_example.app_user) AS users,
           (SELECT coalesce(array_agg("to" ORDER BY "to"), '{}') FROM http_enqueue_example.sent_email) AS emailed,
           (SELECT count(*) FROM http_enqueue_example.task) AS tasks`.execute(kysely);
  const { users, emailed, tasks } = rows[0]!;
  console.log(`\nusers: ${users.join(', ')}\nwelcome emails: ${emailed.join(', ')}\ntasks in the table: ${tasks}`);
  const ok = users.length === 3 && JSON.stringify(users) === JSON.stringify(emailed) && Number(tasks) === 3;
  console.log(ok ? 'OK: one email per committed user; the rolled-back requests left neither a user nor a task.' : 'FAILED: see above');
  return ok;
}
