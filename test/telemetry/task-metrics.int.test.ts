// Issue 15: the worker's counters and histograms, and the queue gauges, agree with the database
// after a scripted mix of outcomes.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createQueueMetrics, createWorker, DeferError, defineTask, enqueueMany, PermanentError, queueStats } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { registerMetrics } from './otel-sdk.js';

const metrics = registerMetrics();
const t = useTestDatabase();
const track = useWorkers();

const failedOnce = new Set<number>();
const fast = { backoff: { base: '1ms', cap: '1ms' } } as const;
const ok = defineTask<{ i: number }>('m-ok', { handler: () => undefined });
const flaky = defineTask<{ i: number }>('m-flaky', {
  ...fast,
  handler: ({ i }) => {
    if (failedOnce.has(i)) return;
    failedOnce.add(i);
    throw new Error('try again');
  },
});
const poison = defineTask<{ i: number }>('m-poison', { ...fast, maxAttempts: 3, handler: () => Promise.reject(new Error('always')) });
const refused = defineTask<{ i: number }>('m-refused', { handler: () => Promise.reject(new PermanentError('bad input')) });
const later = defineTask<{ i: number }>('m-later', { handler: () => Promise.reject(new DeferError('1h', 'not yet')) });
const idle = defineTask<{ i: number }>('m-idle', { handler: () => undefined }); // no worker runs it
const TASKS = [ok, flaky, poison, refused, later];
const items = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));

const attrs = (name: string) => ({ 'messaging.system': 'leasehold', 'messaging.destination.name': name, 'leasehold.table': 'leasehold.task' });

describe('metrics', () => {
  it('counters and histograms equal what the task table shows after succeed, retry, dead and defer', async () => {
    await enqueueMany(t.pool, ok, items(6));
    await enqueueMany(t.pool, flaky, items(4));
    await enqueueMany(t.pool, poison, items(2));
    await enqueueMany(t.pool, refused, items(3));
    await enqueueMany(t.pool, later, items(2));
    await enqueueMany(t.pool, idle, items(5));
    const worker = track(createWorker({ pool: t.pool, tasks: TASKS, pollInterval: '50ms', logger: null }));
    await worker.start();
    // settled: every row of the worker's tasks is done, dead, or deferred for an hour
    await expect
      .poll(async () => (await queueStats(t.pool)).filter((q) => q.name !== 'm-idle').reduce((n, q) => n + q.done + q.dead + q.pending, 0) - (await unsettled()), { timeout: 20_000 })
      .toBe(17);
    await worker.stop();

    const m = await metrics.collect();
    const stats = await queueStats(t.pool);
    const attempts = await attemptsByName();
    for (const task of TASKS) {
      const q = stats.find((s) => s.name === task.name)!;
      const a = attrs(task.name);
      const deferred = task === later ? q.pending : 0; // a deferral refunds its attempt
      expect(m.value('leasehold.task.succeeded', a), task.name).toBe(q.done);
      expect(m.value('leasehold.task.dead', a), task.name).toBe(q.dead);
      expect(m.value('leasehold.task.deferred', a), task.name).toBe(deferred);
      expect(m.value('leasehold.task.claimed', a), task.name).toBe(attempts[task.name]! + deferred);
      // every attempt but the last of a finished task was retried
      expect(m.value('leasehold.task.retried', a), task.name).toBe(attempts[task.name]! - q.done - q.dead);
      expect(m.value('leasehold.task.lease_lost', a), task.name).toBe(0);
      expect(m.count('leasehold.task.handler.duration', a), task.name).toBe(attempts[task.name]! + deferred);
      expect(m.count('leasehold.task.wait.duration', a), task.name).toBe(attempts[task.name]! + deferred);
    }
    // the script did what it says
    expect(Object.fromEntries(stats.map((q) => [q.name, [q.done, q.dead, q.pending]]))).toEqual({
      'm-flaky': [4, 0, 0],
      'm-idle': [0, 0, 5],
      'm-later': [0, 0, 2],
      'm-ok': [6, 0, 0],
      'm-poison': [0, 2, 0],
      'm-refused': [0, 3, 0],
    });
    expect(m.value('leasehold.task.retried', attrs('m-flaky'))).toBe(4);
    expect(m.value('leasehold.task.retried', attrs('m-poison'))).toBe(4);
    expect(m.metric('leasehold.task.wait.duration')?.descriptor.unit).toBe('s');
    expect(m.metric('leasehold.task.claimed')?.descriptor.unit).toBe('{task}');

    // the gauges read the same figures, in one statement
    const gauges = createQueueMetrics({ pool: t.pool, interval: '1h' });
    await gauges.start();
    const g = await metrics.collect();
    gauges.stop();
    for (const q of await queueStats(t.pool)) {
      expect(g.value('leasehold.queue.pending', attrs(q.name)), q.name).toBe(q.pending);
      expect(g.value('leasehold.queue.processing', attrs(q.name)), q.name).toBe(q.processing);
      expect(g.value('leasehold.queue.dead', attrs(q.name)), q.name).toBe(q.dead);
    }
    // m-idle has waited since it was enqueued; the deferred m-later is not due, so not waiting
    expect(g.value('leasehold.queue.oldest_pending_age', attrs('m-idle'))).toBeGreaterThan(0);
    expect(g.value('leasehold.queue.oldest_pending_age', attrs('m-later'))).toBe(0);
    expect(g.metric('leasehold.queue.oldest_pending_age')?.descriptor.unit).toBe('s');
  });
});

describe('metrics of one task', () => {
  it('queue wait counts from when the task became available, by the database clock', async () => {
    const due = defineTask('m-overdue', { handler: () => undefined });
    // due a minute ago: it has waited that long when the worker starts it
    await enqueueMany(t.pool, due, [{ payload: {}, runAt: new Date(Date.now() - 60_000) }]);
    const worker = track(createWorker({ pool: t.pool, tasks: [due], logger: null }));
    const done = nextEvent(worker, 'task:succeeded');
    await worker.start();
    await done;
    await worker.stop();
    const m = await metrics.collect();
    expect(m.count('leasehold.task.wait.duration', attrs('m-overdue'))).toBe(1);
    expect(m.sum('leasehold.task.wait.duration', attrs('m-overdue'))).toBeGreaterThanOrEqual(59);
    expect(m.sum('leasehold.task.wait.duration', attrs('m-overdue'))).toBeLessThan(600);
  });

  it('a task claimed ahead of its time waits from its time, not from its claim', async () => {
    // a claim that reaches the server late takes the row once due, or only just ahead: try again.
    // The timer's claim goes out 20 ms ahead; on a loaded machine (CI's parallel test files) it
    // reached the server within 5 ms of the row's time five times in a row once: twenty tries
    // of about half a second each
    for (let attempt = 1; ; attempt++) {
      let lateMs = Number.NaN;
      const name = `m-ahead-${attempt}`;
      const task = defineTask(name, {
        lease: '60s',
        handler: async (_p, ctx) => {
          const r = await sql<{ ms: number }>`SELECT date_part('epoch', clock_timestamp() - available_at) * 1000 AS ms FROM leasehold.task WHERE id = ${ctx.task.id}::bigint`.execute(t.db);
          lateMs = r.rows[0]!.ms;
        },
      });
      const worker = track(createWorker({ pool: t.pool, tasks: [task], logger: null, pollInterval: '60s' }));
      await worker.start();
      const claimed = nextEvent(worker, 'task:claimed');
      const done = nextEvent(worker, 'task:succeeded');
      await enqueueMany(t.pool, task, [{ payload: {}, runAt: new Date(Date.now() + 400) }]);
      // how long before its time the claim took it, by the database's clock
      const aheadMs = await claimed.then(({ task: row }) => row.availableAt.getTime() - (row.leaseUntil.getTime() - 60_000));
      await done;
      await worker.stop();
      if (aheadMs < 5) {
        expect(attempt).toBeLessThan(20);
        continue;
      }
      const m = await metrics.collect();
      expect(m.count('leasehold.task.wait.duration', attrs(name))).toBe(1);
      // no more than the handler saw (a millisecond for Date's precision), not the hold before its time too
      expect(m.sum('leasehold.task.wait.duration', attrs(name)) * 1000).toBeLessThanOrEqual(lateMs + 1);
      return;
    }
  });

  it('a lost lease is counted once, and nothing else for that attempt', async () => {
    const hold = gate();
    const task = defineTask('m-overtaken', { handler: () => hold.wait });
    const [added] = await enqueueMany(t.pool, task, [{ payload: {} }]);
    const worker = track(createWorker({ pool: t.pool, tasks: [task], logger: null }));
    const claimed = nextEvent(worker, 'task:claimed');
    await worker.start();
    await claimed;
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${added!.id}`.execute(t.db);
    const lost = nextEvent(worker, 'task:lease-lost');
    hold.open();
    await lost;
    await worker.stop();
    const m = await metrics.collect();
    const a = attrs('m-overtaken');
    expect([m.value('leasehold.task.claimed', a), m.value('leasehold.task.lease_lost', a)]).toEqual([1, 1]);
    expect(['succeeded', 'retried', 'deferred', 'dead'].map((o) => m.value(`leasehold.task.${o}`, a))).toEqual([0, 0, 0, 0]);
  });
});

/**
 * Rows still running, or pending and due within the minute, for the worker's tasks. A retry's 1 ms
 * backoff can put its row just after this statement's `now()`: counted as settled, the worker was
 * stopped while it claimed that row again, and the stop refunded the claimed attempt.
 */
async function unsettled(): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task
    WHERE name <> 'm-idle' AND (status = 'processing' OR (status = 'pending' AND available_at <= now() + interval '1 minute'))`.execute(t.db);
  return Number(rows[0]!.n);
}

async function attemptsByName(): Promise<Record<string, number>> {
  const { rows } = await sql<{ name: string; n: string }>`SELECT name, sum(attempts) AS n FROM leasehold.task GROUP BY name`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.n)]));
}
