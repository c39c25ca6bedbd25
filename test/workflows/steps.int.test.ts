import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, getTask, waitForResult, type TaskContext } from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

describe('durable steps', () => {
  it('a recorded step returns its stored result on the next run without running again', async () => {
    const runs: string[] = [];
    let attempt = 0;
    const flow = defineTask('steps-once', {
      maxAttempts: 5,
      backoff: { base: '1ms', cap: '5ms' },
      handler: async (_p: { n: number }, ctx: TaskContext) => {
        attempt++;
        const a = await ctx.step('a', () => (runs.push('a'), { value: 1 }));
        const b = await ctx.step('b', async () => (runs.push('b'), [a.value + 1, null, 'x']));
        if (attempt === 1) throw new Error('crash after two steps');
        const c = await ctx.step('c', () => (runs.push('c'), null));
        const d = await ctx.step('d', () => void runs.push('d'));
        return { a, b, c, d: d ?? 'undefined' };
      },
    });
    const handle = await enqueue(t.pool, flow, { n: 1 });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const result = await waitForResult(t.pool, handle, { timeout: '20s' });
    await worker.stop();
    expect(result).toEqual({ a: { value: 1 }, b: [2, null, 'x'], c: null, d: 'undefined' });
    expect(runs).toEqual(['a', 'b', 'c', 'd']);
    const info = await getTask(t.pool, handle);
    expect(info?.status).toBe('done');
    expect(info?.steps.map((s) => [s.name, s.done, s.result])).toEqual([
      ['a', true, { value: 1 }],
      ['b', true, [2, null, 'x']],
      ['c', true, null],
      ['d', true, undefined],
    ]);
  });

  it('a repeated step name or a result that is not JSON sends the task dead before anything is recorded', async () => {
    const twice = defineTask('steps-twice', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('same', () => 1);
        await ctx.step('same', () => 2);
      },
    });
    const notJson = defineTask('steps-not-json', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('when', () => new Date());
      },
    });
    const a = await enqueue(t.pool, twice, {});
    const b = await enqueue(t.pool, notJson, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [twice, notJson], pollInterval: 20 }));
    const deadA = nextEvent(worker, 'task:dead', ({ task }) => task.id === a.id);
    const deadB = nextEvent(worker, 'task:dead', ({ task }) => task.id === b.id);
    await worker.start();
    expect((await deadA).error.message).toMatch(/step name "same" is used twice/);
    expect((await deadB).error.message).toMatch(/result of step "when" is not JSON-serialisable: the value is a Date/);
    await worker.stop();
    expect((await getTask(t.pool, a))?.steps.map((s) => s.name)).toEqual(['same']);
    expect((await getTask(t.pool, b))?.steps).toEqual([]);
    await expect(waitForResult(t.pool, b)).rejects.toMatchObject({ code: 'TASK_FAILED', status: 'dead' });
  });
});

describe('exactly-once database steps', () => {
  it("commits the application's writes with the step record, once, and rolls them back when the lease moved on", async () => {
    await sql`CREATE TABLE ledger (task_id bigint, note text)`.execute(t.db);
    let stolen = false;
    const flow = defineTask('db-step', {
      maxAttempts: 5,
      lease: '1s',
      backoff: { base: '1ms', cap: '5ms' },
      handler: async (p: { steal: boolean }, ctx: TaskContext) => {
        const id = await ctx.dbStep('record', async (client) => {
          await client.query('INSERT INTO ledger VALUES ($1, $2)', [ctx.task.id, `run ${ctx.task.attempts}`]);
          if (p.steal && !stolen) {
            // another claim takes the task while this transaction is open
            stolen = true;
            await t.pool.query('UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = $1', [ctx.task.id]);
          }
          return ctx.task.attempts;
        });
        return { recordedBy: id };
      },
    });
    const kept = await enqueue(t.pool, flow, { steal: false });
    const refused = await enqueue(t.pool, flow, { steal: true });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20, heartbeatInterval: '300ms' }));
    const lost = nextEvent(worker, 'task:lease-lost', ({ task }) => task.id === refused.id);
    await worker.start();
    expect(await waitForResult(t.pool, kept, { timeout: '20s' })).toEqual({ recordedBy: 1 });
    await lost;
    // the stolen token's lease runs out; the next claim records the step
    expect(await waitForResult(t.pool, refused, { timeout: '20s' })).toEqual({ recordedBy: 2 });
    await worker.stop();
    const { rows } = await sql<{ task_id: string; note: string }>`SELECT task_id, note FROM ledger ORDER BY task_id`.execute(t.db);
    expect(rows).toEqual([
      { task_id: kept.id, note: 'run 1' },
      { task_id: refused.id, note: 'run 2' },
    ]);
  });
});

describe('results', () => {
  it('stores what the handler returned; waitForResult wakes on the end, getTask reads it', async () => {
    const square = defineTask('square', { handler: (p: { n: number }) => ({ square: p.n * p.n }) });
    const handles = await Promise.all([3, 4, 5].map((n) => enqueue(t.pool, square, { n })));
    const waits = handles.map((h) => waitForResult(t.pool, h, { timeout: '20s' }));
    const worker = track(createWorker({ pool: t.pool, tasks: [square], pollInterval: 20 }));
    await worker.start();
    expect(await Promise.all(waits)).toEqual([{ square: 9 }, { square: 16 }, { square: 25 }]);
    await worker.stop();
    const info = await getTask(t.pool, handles[0]!);
    expect(info).toMatchObject({ status: 'done', result: { square: 9 }, attempts: 1 });
    expect(await readTask(t.db, handles[0]!.id)).toMatchObject({ status: 'done' });
    await expect(waitForResult(t.pool, '999999999', { timeout: '1s' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(waitForResult(t.pool, handles[0]!.id, { timeout: '1s' })).resolves.toEqual({ square: 9 });
  });

  it('waitForResult gives up after its timeout or on its signal, leaving the task alone', async () => {
    const never = defineTask('never-run', { handler: () => 1 });
    const handle = await enqueue(t.pool, never, {});
    await expect(waitForResult(t.pool, handle, { timeout: '200ms' })).rejects.toMatchObject({ code: 'WAIT_TIMEOUT' });
    const controller = new AbortController();
    const waiting = waitForResult(t.pool, handle, { signal: controller.signal });
    controller.abort(new Error('no longer needed'));
    await expect(waiting).rejects.toThrow('no longer needed');
    expect(await readTask(t.db, handle.id)).toMatchObject({ status: 'pending' });
  });
});
