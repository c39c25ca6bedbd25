// Handlers that return at once, without a promise: the worker runs them without promise machinery
// (the task runner's fast path). Their outcomes must be exactly those of async handlers, and a
// buffer of thousands of them must run through one flat loop, not a stack that grows per task.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createLeaseWorker, createWorker, defineTask, enqueue, enqueueMany, PermanentError, taskTable, waitForResult, type TaskRow } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

interface Job {
  readonly kind: 'ok' | 'permanent' | 'retry';
}

async function statusCounts(): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; attempts: number; n: string }>`
    SELECT status, attempts, count(*) AS n FROM leasehold.task GROUP BY status, attempts`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [`${r.status}@${r.attempts}`, Number(r.n)]));
}

describe('handlers that return at once', () => {
  it('createLeaseWorker: 5,000 returns, synchronous throws and permanent errors are written as async ones would be', async () => {
    const job = defineTask<Job>('sync-job', { handler: () => {} });
    const kinds: Job['kind'][] = Array.from({ length: 5_000 }, (_, i) => (i % 1_000 === 1 ? 'permanent' : i % 1_000 === 2 ? 'retry' : 'ok'));
    await enqueueMany(t.pool, job, kinds.map((kind) => ({ payload: { kind }, maxAttempts: 1 + (kind === 'retry' ? 1 : 0) })));
    let handled = 0;
    const worker = track(
      createLeaseWorker<TaskRow>({
        pool: t.pool,
        table: taskTable(),
        concurrency: 8,
        // no promise anywhere: returns, or throws synchronously
        handle: (task) => {
          handled++;
          const { kind } = task.payload as Job;
          if (kind === 'permanent') throw new PermanentError('refused at once');
          if (kind === 'retry' && task.attempts === 1) throw new Error('try again');
        },
      }),
    );
    const dead: string[] = [];
    worker.on('task:dead', ({ task }) => void dead.push(task.id));
    await worker.start();
    // every task ends: 4,990 done at once, 5 done on their second attempt, 5 dead
    await expect.poll(statusCounts, { timeout: 60_000, interval: 100 }).toEqual({ 'done@1': 4_990, 'done@2': 5, 'dead@1': 5 });
    expect(dead).toHaveLength(5);
    expect(handled).toBe(5_005); // 4,990 + 5 × 2 + 5
    expect(worker.inFlightCount).toBe(0);
    await worker.stop();
  });

  it('createWorker: a handler that returns a value at once stores it as the result', async () => {
    const sum = defineTask('sync-sum', { handler: (p: { a: number; b: number }) => p.a + p.b });
    const worker = track(createWorker({ pool: t.pool, tasks: [sum] }));
    await worker.start();
    const handle = await enqueue(t.pool, sum, { a: 2, b: 40 });
    await expect(waitForResult(t.pool, handle, { timeout: '20s' })).resolves.toBe(42);
    await worker.stop();
  });

  it('createWorker: a synchronous throw of an invalid result is a permanent failure, like an async one', async () => {
    const bad = defineTask('sync-bad-result', { handler: () => ({ at: 1n }) as unknown as { at: number } });
    const worker = track(createWorker({ pool: t.pool, tasks: [bad] }));
    await worker.start();
    const died = nextEvent(worker, 'task:dead');
    await enqueue(t.pool, bad, {});
    const { error } = await died;
    expect(error.message).toMatch(/result of task "sync-bad-result"/);
    await worker.stop();
  });
});
