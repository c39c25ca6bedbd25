import { setTimeout as sleep } from 'node:timers/promises';
import { defineTask, RetryableError } from '@leasehold/core';
import { sql, type Kysely } from 'kysely';

/** The example's own tables (the task table belongs to leasehold). */
export interface JobsDatabase {
  'typed_jobs_example.report_chunk': { report_id: string; chunk: number; attempt: number };
  'typed_jobs_example.notification': { report_id: string; task_id: string };
}

/** The payload and checkpoint types travel from `defineTask` into `enqueue` and the handler. */
export interface BuildReport {
  reportId: string;
  chunks: number;
}

/** What `build-report` saves after each chunk, and gets back on its next attempt. */
export interface ReportProgress {
  done: number;
}

/** Task types of this example, wired to the example's database. */
export function defineJobs(db: Kysely<JobsDatabase>, schema: string) {
  /** Runs after a report is complete; enqueued by it, in the same commit as its completion. */
  const notifyReportReady = defineTask<{ reportId: string }>('notify-report-ready', {
    handler: async ({ reportId }, ctx) => {
      // ctx.task.id is stable across retries: the idempotency key for whatever you call here
      await db.insertInto('typed_jobs_example.notification').values({ report_id: reportId, task_id: ctx.task.id }).execute();
    },
  });

  /**
   * A long task: 16 chunks of ~500 ms, 8 s in all, much longer than its 3 s lease. The worker's
   * heartbeat renews the lease while the handler runs, so no other worker takes it over. Each
   * chunk is checkpointed with a fenced write; the first attempt fails half-way (a transient
   * error, as a flaky dependency would cause) and the retry resumes after the last checkpoint.
   */
  const buildReport = defineTask<BuildReport, ReportProgress>('build-report', {
    lease: '3s',
    maxAttempts: 5,
    backoff: { base: '100ms', cap: '300ms' },
    handler: async ({ reportId, chunks }, ctx) => {
      const start = (ctx.lastCheckpoint?.done ?? 0) + 1;
      for (let chunk = start; chunk <= chunks; chunk++) {
        ctx.signal.throwIfAborted(); // lease lost or shutting down: stop working
        await sleep(500, undefined, { signal: ctx.signal }); // the work of one chunk
        // a crash between this write and the checkpoint would repeat the chunk: keep chunks idempotent
        await sql`INSERT INTO typed_jobs_example.report_chunk (report_id, chunk, attempt)
                  VALUES (${reportId}, ${chunk}, ${ctx.task.attempts}) ON CONFLICT DO NOTHING`.execute(db);
        await ctx.checkpoint({ done: chunk });
        if (chunk === Math.floor(chunks / 2) && ctx.task.attempts === 1) {
          throw new RetryableError(`report ${reportId}: storage timed out after chunk ${chunk} (simulated)`);
        }
      }
      // written only if this completion commits: no notification for a report that did not finish
      ctx.enqueue(notifyReportReady, { reportId }, { schema });
    },
  });

  /** A short task with a typed payload. */
  const sendEmail = defineTask<{ to: string; subject: string }>('send-email', {
    lease: '30s',
    handlerTimeout: '10s',
    handler: async () => {
      await sleep(20); // the mail API call; pass ctx.task.id as its idempotency key
    },
  });

  return { buildReport, notifyReportReady, sendEmail };
}
