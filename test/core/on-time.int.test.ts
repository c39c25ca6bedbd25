// Due means started (issue 32): what comes due later — a task enqueued with a start time, a
// retry's delay, a workflow's sleep — is started by a sleeping worker on a timer armed from what
// its claims report (and from its own writes), not at its next poll. These workers poll once a
// minute, far past every deadline here, so a task that starts in time was started by that timer.
// When the wake-up for a due item is lost (the producer sent no NOTIFY, the LISTEN connection
// died), the item still starts by the bound the docs give: the next poll.
import { createWorker, defineTask, DeferError, enqueue, enqueueMany, waitForResult, type TaskContext } from '@leasehold/core';
import pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { serverNow, waitUntil, wakeUntil } from '../wake-state.js';
import { countingPool } from '../counting-pool.js';

const t = useTestDatabase();
const track = useWorkers();

/** Far past every deadline below: only the worker's timer can start a due item in time. */
const NEVER_POLL = '60s';
/** Generous for a shared 2-core machine; a missed timer takes NEVER_POLL. */
const DEADLINE_MS = 20_000;

/**
 * Waits until a worker has gone to sleep, so that only a wake-up, its timer or its poll starts
 * what follows: its announcement moved on from what it was when this was called (an earlier
 * test's workers leave one behind that lasts some seconds).
 */
async function asleep(): Promise<void> {
  const before = await wakeUntil(t.db);
  await waitUntil('the idle worker announces it sleeps', async () => {
    const until = await wakeUntil(t.db);
    return until > before && until > (await serverNow(t.db));
  });
}

/** Whether the database's clock has passed the task's `available_at` (a started task was due). */
async function dueByNow(id: string): Promise<boolean> {
  const r = await sql<{ due: boolean }>`SELECT clock_timestamp() >= available_at AS due FROM leasehold.task WHERE id = ${id}::bigint`.execute(t.db);
  return r.rows[0]!.due;
}

describe('due means started', () => {
  it('a task enqueued with a start time is started when due by a worker asleep since before it', async () => {
    const seen: { id: string; due: boolean }[] = [];
    const later = defineTask<{ n: number }>('on-time.later', { handler: async (_p, ctx) => void seen.push({ id: ctx.task.id, due: await dueByNow(ctx.task.id) }) });
    const worker = track(createWorker({ pool: t.pool, tasks: [later], pollInterval: NEVER_POLL }));
    await worker.start();
    await asleep();
    // two due times: the nearer one enqueued second (its producer's NOTIFY makes the worker look again)
    const done = [nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === 1, DEADLINE_MS), nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === 2, DEADLINE_MS)];
    await enqueue(t.pool, later, { n: 1 }, { delay: '1500ms' });
    await enqueue(t.pool, later, { n: 2 }, { delay: '700ms' });
    await Promise.all(done);
    expect(seen).toHaveLength(2);
    expect(seen.every((s) => s.due)).toBe(true);
    await worker.stop();
  });

  it("a deferred task's next attempt starts when its delay is over, from the worker that wrote it", async () => {
    let attempts = 0;
    let dueAtRetry: boolean | undefined;
    const flaky = defineTask<object>('on-time.flaky', {
      handler: async (_p, ctx) => {
        if (++attempts === 1) throw new DeferError('1s', 'not yet');
        dueAtRetry = await dueByNow(ctx.task.id);
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flaky], pollInterval: NEVER_POLL }));
    await worker.start();
    const succeeded = nextEvent(worker, 'task:succeeded', () => true, DEADLINE_MS);
    await enqueue(t.pool, flaky, {});
    await succeeded;
    expect(attempts).toBe(2);
    expect(dueAtRetry).toBe(true);
    await worker.stop();
  });

  it('a sleeping workflow resumes when its sleep is over, on each of two workers', async () => {
    const napper = defineTask('on-time.nap', {
      handler: async (p: { n: number }, ctx: TaskContext) => {
        await ctx.sleep('nap', '800ms');
        return { n: p.n };
      },
    });
    const workers = [0, 1].map(() => track(createWorker({ pool: t.pool, tasks: [napper], pollInterval: NEVER_POLL })));
    for (const w of workers) await w.start();
    const handles = await Promise.all(Array.from({ length: 20 }, (_, n) => enqueue(t.pool, napper, { n })));
    const results = await Promise.all(handles.map((h) => waitForResult(t.pool, h, { timeout: DEADLINE_MS })));
    expect(results.map((r) => r.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n));
    for (const w of workers) await w.stop();
  });

  it("an idle worker's cost does not grow: per poll no more than a claim, the wake arm and the claim before it sleeps", async () => {
    const POLL_MS = 500;
    const { pool: counted, sent } = countingPool(t.url);
    counted.on('error', () => undefined);
    try {
      const noop = defineTask<{ n: number }>('on-time.noop', { handler: () => undefined });
      const worker = track(createWorker({ pool: counted, tasks: [noop], pollInterval: POLL_MS }));
      await worker.start();
      // two bursts of work more than the ready floor's window (1 s) apart, so that its claims
      // start past a floor, whose probe an idle worker folds into its polls
      for (const burst of [0, 1]) {
        const idle = nextEvent(worker, 'worker:idle', () => true, DEADLINE_MS);
        await enqueueMany(t.pool, noop, Array.from({ length: 300 }, (_, n) => ({ payload: { n: burst * 300 + n } })));
        await idle;
        await new Promise((resolve) => setTimeout(resolve, 1_200));
      }
      await asleep();
      const from = sent.length;
      const started = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 10 * POLL_MS));
      const idleSent = sent.slice(from).map((text) => text.replace(/\s+/g, ' ').trim());
      const polls = Math.ceil((performance.now() - started) / POLL_MS) + 1;
      // a loaded machine polls less often, never more
      expect(idleSent.length).toBeLessThanOrEqual(3 * polls);
      expect(idleSent.filter((text) => !/^(WITH doomed AS|SELECT pg_try_advisory_xact_lock|SELECT setval)/.test(text))).toEqual([]);
      await worker.stop();
    } finally {
      await counted.end();
    }
  });

  it('a due task whose producer sent no NOTIFY, and one due after the LISTEN connection died, start by the next poll', async () => {
    const POLL_MS = 3_000;
    const started: number[] = [];
    const quiet = defineTask<{ n: number }>('on-time.quiet', { handler: (p) => void started.push(p.n) });
    // (the connections it loses are reported as worker errors: not logged here)
    const worker = track(createWorker({ pool: t.pool, tasks: [quiet], pollInterval: POLL_MS, logger: null }));
    await worker.start();
    await asleep();
    // a session whose triggers do not fire: its insert neither notifies nor takes the wake lock
    const silent = new pg.Pool({ connectionString: t.url, max: 1, options: '-c session_replication_role=replica' });
    try {
      const first = nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === 1, POLL_MS * 2 + DEADLINE_MS);
      await enqueue(silent, quiet, { n: 1 }, { delay: '300ms' });
      await first;
    } finally {
      await silent.end();
    }
    // every connection of the database drops while the worker sleeps, its LISTEN connection
    // among them; what comes due meanwhile is not lost
    await asleep();
    const killed = await sql<{ n: number }>`
      SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()`.execute(t.db);
    expect(killed.rows[0]!.n).toBeGreaterThan(0);
    const second = nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === 2, POLL_MS * 2 + DEADLINE_MS);
    await enqueue(t.pool, quiet, { n: 2 }, { delay: '300ms' });
    await second;
    expect(started).toEqual([1, 2]);
    await worker.stop();
  });
});
