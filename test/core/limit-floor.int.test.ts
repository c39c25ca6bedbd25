// Tasks under limits while a long transaction elsewhere holds the MVCC horizon: each claimed row
// keeps a dead entry in its limit's index (task_flow_ready), and each finished one in the index of
// the limit's running tasks (task_flow_held_id). The worker's claims read a limit's ready rows from
// a floor of their own, look for a limit's expired leases on the unlimited ones' cadence, and count
// a stripe's running tasks from its low, so what a claim reads stays flat however many limited
// tasks went through; and the floor never passes a row that can still be taken: a late commit, or
// a retry that comes back with its old id.
import { createWorker, defineLimit, defineTask, enqueue, enqueueMany, RetryableError, type LimitDefinition } from '@leasehold/core';
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { holdHorizon, indexReads, useSessions } from '../horizon.js';

const t = useTestDatabase();
const { newPool, endPool, endAfter } = useSessions(t.url);
const track = useWorkers();

const done = async (name: string) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE name = ${name} AND status = 'done'`.execute(t.db)).rows[0]!.n;

describe.each([
  ['kept in its list', 20],
  ['kept in stripes', 1_000],
])('limit floor, a concurrency limit %s', (_kind, bound) => {
  // names of their own per bound: the variants share the test file's database
  const limitOf = (name: string): LimitDefinition => defineLimit(`${name}.${bound}`, { concurrency: bound });
  const named = (name: string) => `${name}.${bound}`;

  it('with the horizon held, claims read past the entries of the limit’s rows claimed before, not all of them', { timeout: 180_000 }, async () => {
    endAfter(await holdHorizon(t.url, 'limit-floor-horizon'));
    const limit = limitOf('floor.bulk');
    const job = defineTask<{ i: number }>(named('floor.bulk'), { limit, handler: () => {} });
    // 3,000 rows claimed and done while the horizon is held: 3,000 dead entries in each index
    await enqueueMany(t.pool, job, Array.from({ length: 3_000 }, (_, i) => ({ payload: { i } })));
    const bulkPool = newPool();
    const bulk = track(createWorker({ pool: bulkPool, tasks: [job], concurrency: 8 }));
    await bulk.start();
    await expect.poll(() => done(job.name), { timeout: 120_000 }).toBe(3_000);
    await bulk.stop();
    await endPool(bulkPool);

    // then tasks one at a time for 5 s through a new worker: for its first second (the floor's
    // window) its claims walk the entries, and then they start where the pending rows start
    await expect.poll(async () => (await indexReads(t.db, 'task_flow_ready')).scans, { timeout: 15_000 }).toBeGreaterThan(0);
    const before = { ready: await indexReads(t.db, 'task_flow_ready'), held: await indexReads(t.db, 'task_flow_held_id') };
    const pool = newPool();
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 1 }));
    const started: string[] = [];
    worker.on('task:succeeded', ({ task }) => void started.push(task.id));
    await worker.start();
    let tasks = 0;
    const until = performance.now() + 5_000;
    for (; performance.now() < until || tasks < 50; tasks++) {
      const { id } = await enqueue(t.pool, job, { i: -tasks });
      await expect.poll(() => started.includes(id), { timeout: 30_000, interval: 5 }).toBe(true);
    }
    await worker.stop();
    await endPool(pool);
    // the worker's sessions have ended, so their counts are in
    let ready = before.ready;
    await expect
      .poll(async () => {
        ready = await indexReads(t.db, 'task_flow_ready');
        return ready.scans - before.ready.scans;
      }, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(50);
    const held = await indexReads(t.db, 'task_flow_held_id');
    const perScan = (ready.entries - before.ready.entries) / (ready.scans - before.ready.scans);
    // from the limit's beginning a scan of the ready rows reads the 3,000 entries (a claim makes
    // several scans of the limit's index, most of them an empty range); with the floor, only the
    // first second's claims do
    expect(perScan, `task_flow_ready entries read per scan (${ready.scans - before.ready.scans} scans)`).toBeLessThan(300);
    // every claim used to look for the limit's expired leases through the running tasks' index,
    // some 3,000 entries a claim: now twice a second at most; and a claim of a limit kept in
    // stripes counted each stripe's running tasks from the stripe's first entry (1,500 each):
    // now from the stripe's low
    const heldPerTask = (held.entries - before.held.entries) / tasks;
    expect(heldPerTask, `task_flow_held_id entries read per task (${tasks} tasks)`).toBeLessThan(600);
  });

  it('a task under the limit whose enqueue commits well after it took its id, while claims went past it, still starts', { timeout: 120_000 }, async () => {
    const limit = limitOf('floor.late');
    const job = defineTask<{ k: string }>(named('floor.late'), { limit, handler: () => {} });
    const started = new Set<string>();
    const pool = newPool();
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 2, pollInterval: '500ms' }));
    worker.on('task:succeeded', ({ task }) => started.add((task.payload as { k: string }).k));
    await worker.start();

    // a producer's transaction takes its task's id, then stays open
    const producer = endAfter(new pg.Client({ connectionString: t.url }));
    await producer.connect();
    await producer.query('BEGIN');
    await enqueue(producer, job, { k: 'late' });
    // meanwhile tasks with later ids come and go, for longer than the floor's window (1 s)
    const until = performance.now() + 2_500;
    for (let i = 0; performance.now() < until; i++) {
      await enqueue(t.pool, job, { k: `next-${i}` });
      await expect.poll(() => started.has(`next-${i}`), { timeout: 30_000, interval: 5 }).toBe(true);
    }
    await producer.query('COMMIT');
    // found by the limit floor's probe (once per poll interval) rather than never
    await expect.poll(() => started.has('late'), { timeout: 30_000, interval: 20 }).toBe(true);
    await worker.stop();
  });

  it('a retry under the limit comes back with its old id, below the floor, and is taken by the next claims, not the probe', { timeout: 120_000 }, async () => {
    const limit = limitOf('floor.retry');
    let failed = false;
    const started = new Set<string>();
    const job = defineTask<{ k: string }>(named('floor.retry'), {
      limit,
      handler: ({ k }) => {
        if (k === 'retried' && !failed) {
          failed = true;
          throw new RetryableError('once', { retryAfterMs: 2_000 });
        }
        started.add(k);
      },
    });
    const pool = newPool();
    // a poll interval far past the test's deadline: only the claims' own floor reset can find it
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 2, pollInterval: '120s' }));
    await worker.start();
    await enqueue(t.pool, job, { k: 'retried' });
    await expect.poll(() => failed, { timeout: 30_000, interval: 5 }).toBe(true);
    // tasks with later ids keep the claims busy and, after the floor's window (1 s), their floor
    // past the retried row, which comes due 2 s after its failure
    const until = performance.now() + 4_000;
    for (let i = 0; performance.now() < until; i++) {
      await enqueue(t.pool, job, { k: `next-${i}` });
      await expect.poll(() => started.has(`next-${i}`), { timeout: 30_000, interval: 5 }).toBe(true);
    }
    await expect.poll(() => started.has('retried'), { timeout: 20_000, interval: 20 }).toBe(true);
    await worker.stop();
  });
});
