// A typed job queue: task types with typed payloads, a long-running task that outlives its
// lease thanks to the heartbeat and resumes from its checkpoint after a failure, and a
// follow-up task committed atomically with its parent's completion.
//   npm run typed-jobs -w @leasehold/examples   (DATABASE_URL, or a throwaway server when unset)
import { createWorker, enqueue, enqueueMany, migrate } from '@leasehold/core';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { openDatabase } from '../shared/database.js';
import { createPool } from '../shared/pool.js';
import { shutdownSignal } from '../shared/shutdown.js';
import { defineJobs, type JobsDatabase } from './tasks.js';

const SCHEMA = 'typed_jobs_example';
const signal = shutdownSignal();
const database = await openDatabase(signal);
const pool = createPool(database.url, 6);
const db = new Kysely<JobsDatabase>({ dialect: new PostgresDialect({ pool }) });
let code = 1;
try {
  await sql`DROP SCHEMA IF EXISTS ${sql.id(SCHEMA)} CASCADE`.execute(db);
  await migrate(pool, { schema: SCHEMA }); // leasehold's task table, in the example's schema
  await sql`CREATE TABLE typed_jobs_example.report_chunk (report_id text, chunk int, attempt int, PRIMARY KEY (report_id, chunk))`.execute(db);
  await sql`CREATE TABLE typed_jobs_example.notification (report_id text, task_id text)`.execute(db);

  const { buildReport, notifyReportReady, sendEmail } = defineJobs(db, SCHEMA);
  const worker = createWorker({ pool, schema: SCHEMA, tasks: [buildReport, notifyReportReady, sendEmail], concurrency: 4, pollInterval: '200ms' });
  worker.on('task:claimed', ({ task }) => console.log(`claimed   ${task.name} #${task.id} (attempt ${task.attempts})`));
  worker.on('task:retrying', ({ task, error, delayMs }) => console.log(`retrying  ${task.name} #${task.id} in ${Math.round(delayMs)} ms: ${error.message}`));
  worker.on('task:succeeded', ({ task, durationMs }) => console.log(`succeeded ${task.name} #${task.id} after ${(durationMs / 1000).toFixed(1)} s`));
  worker.on('task:dead', ({ task, error }) => console.log(`dead      ${task.name} #${task.id}: ${error}`));

  await worker.start();
  const report = await enqueue(pool, buildReport, { reportId: 'q3-sales', chunks: 16 }, { schema: SCHEMA });
  await enqueueMany(pool, sendEmail, [{ payload: { to: 'ada@example.com', subject: 'Hi' } }, { payload: { to: 'alan@example.com', subject: 'Hi' } }], { schema: SCHEMA });
  // @ts-expect-error the payload type comes from defineTask: `chunks` must be a number
  void (() => enqueue(pool, buildReport, { reportId: 'x', chunks: 'twelve' }));

  await waitUntilSettled(db, signal);
  await worker.stop({ timeout: '5s' });
  code = (await check(db, report.id)) ? 0 : 1;
} catch (error) {
  code = signal.aborted ? 130 : 1;
  if (!signal.aborted) console.error('example failed:', error);
} finally {
  await db.destroy();
  await database.close();
}
process.exit(code);

/** Waits until no task is pending or running (four tasks: report, its notification, two emails). */
async function waitUntilSettled(kysely: Kysely<JobsDatabase>, abort: AbortSignal): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { rows } = await sql<{ open: string; total: string }>`
      SELECT count(*) FILTER (WHERE status IN ('pending', 'processing')) AS open, count(*) AS total
      FROM typed_jobs_example.task`.execute(kysely);
    if (Number(rows[0]!.total) >= 4 && Number(rows[0]!.open) === 0) return;
    abort.throwIfAborted();
    if (Date.now() > deadline) throw new Error('tasks did not finish within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Prints what happened and says whether it is what the example promises. */
async function check(kysely: Kysely<JobsDatabase>, reportTaskId: string): Promise<boolean> {
  const task = await sql<{ status: string; attempts: number; lease_version: string }>`
    SELECT status, attempts, lease_version FROM typed_jobs_example.task WHERE id = ${reportTaskId}`.execute(kysely);
  const chunks = await sql<{ attempt: number; n: string }>`
    SELECT attempt, count(*) AS n FROM typed_jobs_example.report_chunk GROUP BY attempt ORDER BY attempt`.execute(kysely);
  const notes = await sql<{ n: string }>`SELECT count(*) AS n FROM typed_jobs_example.notification`.execute(kysely);
  const statuses = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM typed_jobs_example.task GROUP BY status`.execute(kysely);
  const t = task.rows[0]!;
  const perAttempt = chunks.rows.map((r) => `attempt ${r.attempt}: ${r.n} chunks`).join(', ');
  const total = chunks.rows.reduce((n, r) => n + Number(r.n), 0);
  console.log(`\nbuild-report: ${t.status} after ${t.attempts} attempts and ${t.lease_version} claims; ${perAttempt}`);
  console.log(`notifications: ${notes.rows[0]!.n}; tasks by status: ${statuses.rows.map((r) => `${r.status} ${r.n}`).join(', ')}`);
  // claims = attempts: the 3 s lease never ran out during the 4 s attempts (the heartbeat renewed it)
  const ok = t.status === 'done' && t.attempts === 2 && Number(t.lease_version) === 2 && total === 16 && chunks.rows.length === 2 &&
    Number(notes.rows[0]!.n) === 1 && statuses.rows.every((r) => r.status === 'done');
  console.log(ok ? 'OK: 16 chunks, each once, over 2 attempts; the lease held; one notification.' : 'FAILED: see above');
  return ok;
}
