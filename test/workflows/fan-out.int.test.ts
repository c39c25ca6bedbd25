import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, getTask, leaseRetryDeadMany, PermanentError, taskTable, waitForResult, type TaskContext } from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

describe('fan-out and fan-in at size', () => {
  it('1,000 children: the parent waits holding no slot and no lease, then resumes with every result in order', { timeout: 120_000 }, async () => {
    const work = defineTask('fan-child', { handler: (p: { n: number }) => ({ n: p.n, square: p.n * p.n }) });
    let parentRuns = 0;
    const parent = defineTask('fan-parent', {
      handler: async (p: { count: number }, ctx: TaskContext) => {
        parentRuns++;
        const kids = await ctx.spawn('kids', work, Array.from({ length: p.count }, (_, n) => ({ payload: { n } })));
        const results = await ctx.waitForChildren(kids);
        return { count: results.length, inOrder: results.every((r, i) => r.n === i && r.square === i * i) };
      },
    });
    const handle = await enqueue(t.pool, parent, { count: 1_000 });
    const worker = track(createWorker({ pool: t.pool, tasks: [parent, work], concurrency: 8, pollInterval: 50 }));
    const parked = nextEvent(worker, 'task:suspended', ({ task }) => task.id === handle.id);
    await worker.start();
    await parked;
    // while its children run, the parent is parked: no lease, no owner, its attempt given back
    const waiting = await readTask(t.db, handle.id);
    expect(waiting).toMatchObject({ status: 'waiting', leaseOwner: null, attempts: 0 });
    expect(await waitForResult(t.pool, handle, { timeout: '100s' })).toEqual({ count: 1_000, inOrder: true });
    await worker.stop();
    expect(parentRuns).toBe(2); // the run that spawned and parked, and the one that resumed
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE parent_id = ${handle.id} AND status = 'done'`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(1_000);
  });

  it('children ending while their parent still runs on the same worker: no deadlock between heartbeats and finalizes', { timeout: 60_000 }, async () => {
    const work = defineTask('busy-child', { handler: (p: { n: number }) => p.n });
    const parent = defineTask('busy-parent', {
      handler: async (_p: object, ctx: TaskContext) => {
        const kids = await ctx.spawn('kids', work, Array.from({ length: 400 }, (_, n) => ({ payload: { n } })));
        // the parent stays processing (heartbeated with its children) while they end
        const deadline = Date.now() + 20_000;
        while (Date.now() < deadline) {
          const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE parent_id = ${ctx.task.id} AND status = 'done'`.execute(t.db);
          if (Number(rows[0]!.n) === 400) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        return (await ctx.waitForChildren(kids)).length;
      },
    });
    const handles = await Promise.all([1, 2, 3].map(() => enqueue(t.pool, parent, {})));
    const errors: string[] = [];
    const workers = [1, 2].map(() => track(createWorker({ pool: t.pool, tasks: [parent, work], concurrency: 16, heartbeatInterval: '50ms', pollInterval: 20 })));
    for (const w of workers) {
      w.on('worker:error', ({ error }) => errors.push(error.message));
      w.on('heartbeat:failed', ({ error }) => errors.push(error.message));
      await w.start();
    }
    expect(await Promise.all(handles.map((h) => waitForResult(t.pool, h, { timeout: '50s' })))).toEqual([400, 400, 400]);
    for (const w of workers) await w.stop();
    expect(errors).toEqual([]);
  });

  it('a dead workflow retried by a person resumes at the step that failed', async () => {
    const calls: string[] = [];
    let broken = true;
    const flow = defineTask('resume-at-failed', {
      maxAttempts: 1,
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('one', () => void calls.push('one'));
        await ctx.step('two', () => {
          calls.push('two');
          if (broken) throw new PermanentError('downstream refused');
        });
        await ctx.step('three', () => void calls.push('three'));
        return 'finished';
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    const dead = nextEvent(worker, 'task:dead', ({ task }) => task.id === handle.id);
    await worker.start();
    await dead;
    broken = false; // a person fixed the cause
    expect((await leaseRetryDeadMany(t.pool, taskTable(), [handle.id], 'downstream fixed')).changed).toEqual([handle.id]);
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toBe('finished');
    await worker.stop();
    expect(calls).toEqual(['one', 'two', 'two', 'three']);
    expect((await getTask(t.pool, handle))?.steps.map((s) => s.name)).toEqual(['one', 'two', 'three']);
  });
});
