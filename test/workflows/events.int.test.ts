// Issue 33 item 2: progress events. ctx.setEvent(key, value) sets a task's event with the fence,
// recorded like a step; getEvent(pool, task, key) reads it, waiting (LISTEN/NOTIFY) while it is
// not set. A web request can show "payment captured, waiting for approval" while the run is parked.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  createWorker,
  defineEvent,
  defineSignal,
  defineTask,
  enqueue,
  getEvent,
  getTask,
  isLeaseholdError,
  leasePurgeDone,
  LeaseLostError,
  sendSignal,
  taskTable,
  waitForResult,
  type TaskContext,
} from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

const payment = defineEvent<{ stage: 'captured' | 'approved'; by?: string }>('payment');
const approved = defineSignal<{ by: string }>('approved');

async function eventRows(id: string): Promise<{ key: string; value: unknown; lease_version: string }[]> {
  const { rows } = await sql<{ key: string; value: unknown; lease_version: string }>`
    SELECT key, value, lease_version FROM leasehold.task_event WHERE task_id = ${id}::bigint ORDER BY key`.execute(t.db);
  return rows;
}

async function eventSteps(id: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM leasehold.task_step WHERE task_id = ${id}::bigint AND kind = 'event'`.execute(t.db);
  return rows[0]!.n;
}

describe('progress events', () => {
  it("a parked run shows 'captured'; a getEvent waiting before the next write is woken by it, not by a poll; after the resume it shows 'approved'", async () => {
    const order = defineTask('order-events', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('charge', () => 'ch_1');
        await ctx.setEvent(payment, { stage: 'captured' });
        const approval = await ctx.waitForSignal(approved);
        if (approval.timedOut) return 'expired';
        await ctx.setEvent(payment, { stage: 'approved', by: approval.payload.by });
        await ctx.setEvent('done-by', approval.payload.by);
        return 'shipped';
      },
    });
    const handle = await enqueue(t.pool, order, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [order], pollInterval: 20 }));
    const parked = nextEvent(worker, 'task:suspended', ({ task }) => task.id === handle.id);
    await worker.start();
    await parked;
    expect((await readTask(t.db, handle.id)).status).toBe('waiting');
    // typed by the definition: { stage, by? } | undefined
    const now = await getEvent(t.pool, handle, payment, { timeout: '5s' });
    expect(now).toEqual({ stage: 'captured' });
    expect(await getEvent(t.pool, handle, 'payment', { timeout: 0 })).toEqual({ stage: 'captured' });

    // waits for a key not set yet, with a bound far beyond the test: only the write's NOTIFY ends it
    const started = Date.now();
    const doneBy = getEvent<string>(t.pool, handle, 'done-by', { timeout: '60s' });
    await sendSignal(t.pool, handle, approved, { by: 'ann' });
    expect(await doneBy).toBe('ann');
    expect(Date.now() - started).toBeLessThan(15_000);

    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toBe('shipped');
    await worker.stop();
    expect(await getEvent(t.pool, handle, payment)).toEqual({ stage: 'approved', by: 'ann' });
    // each call is a record of its own (kind 'event', a position like any call), the value its result
    const info = await getTask(t.pool, handle);
    expect(info?.steps.map((s) => [s.name, s.kind, s.position, s.result])).toEqual([
      ['charge', 'step', 0, 'ch_1'],
      ['event:payment#1', 'event', 1, { stage: 'captured' }],
      ['signal:approved', 'signal', 2, { timedOut: false, payload: { by: 'ann' } }],
      ['event:payment#2', 'event', 3, { stage: 'approved', by: 'ann' }],
      ['event:done-by#1', 'event', 4, 'ann'],
    ]);
    // one row per key: the latest value
    expect((await eventRows(handle.id)).map((r) => [r.key, r.value])).toEqual([
      ['done-by', 'ann'],
      ['payment', { stage: 'approved', by: 'ann' }],
    ]);
  });

  it('getEvent racing setEvent: 50 runs, each read started right as the run writes, every read gets the value', async () => {
    const ready = defineEvent<{ n: number }>('ready');
    const inside: Promise<{ n: number } | undefined>[] = [];
    const racer = defineTask('event-racer', {
      handler: async (p: { n: number }, ctx: TaskContext) => {
        // a reader that starts LISTEN and its first read while the write is under way
        inside.push(getEvent(t.pool, ctx.task.id, ready, { timeout: '30s' }));
        await ctx.setEvent(ready, { n: p.n });
        return p.n;
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [racer], concurrency: 10, pollInterval: 20 }));
    await worker.start();
    const outside: Promise<{ n: number } | undefined>[] = [];
    const handles = [];
    for (let n = 0; n < 50; n++) {
      const handle = await enqueue(t.pool, racer, { n });
      handles.push(handle);
      // and readers from outside, started while the worker claims and runs the task
      outside.push(getEvent(t.pool, handle, ready, { timeout: '30s' }));
    }
    const expected = Array.from({ length: 50 }, (_, n) => ({ n }));
    expect(await Promise.all(outside)).toEqual(expected);
    expect(await Promise.all(handles.map((h) => waitForResult(t.pool, h, { timeout: '30s' })))).toEqual(expected.map((e) => e.n));
    await worker.stop();
    expect(inside).toHaveLength(50);
    expect((await Promise.all(inside)).map((v) => v?.n).sort((a, b) => a! - b!)).toEqual(expected.map((e) => e.n));
  });

  it('a rerun after a crash replays its recorded calls without writing: an earlier value never replaces a later one', async () => {
    const stage = defineEvent<string>('stage');
    let runs = 0;
    const flow = defineTask('event-replay', {
      maxAttempts: 3,
      backoff: { base: '1ms', cap: '2ms' },
      handler: async (_p: object, ctx: TaskContext) => {
        runs++;
        await ctx.setEvent(stage, 'captured');
        // what a reader sees while the rerun replays the first call
        const between = await ctx.step('between', () => getEvent(t.pool, ctx.task.id, stage, { timeout: 0 }));
        await ctx.setEvent(stage, 'approved');
        if (runs === 1) throw new Error('crash after both writes');
        return { between, after: await getEvent(t.pool, ctx.task.id, stage, { timeout: 0 }) };
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ between: 'captured', after: 'approved' });
    await worker.stop();
    expect(runs).toBe(2);
    // written by the first run (lease_version 1), not again by the rerun
    expect(await eventRows(handle.id)).toEqual([{ key: 'stage', value: 'approved', lease_version: '1' }]);
    expect(await eventSteps(handle.id)).toBe(2);
  });

  it('a run whose lease moved on cannot set an event: LeaseLostError, nothing written', async () => {
    const entered = gate();
    const proceed = gate();
    let seen: unknown;
    const stale = defineTask('event-stale', {
      lease: '60s',
      handler: async (_p: object, ctx: TaskContext) => {
        entered.open();
        await proceed.wait;
        try {
          await ctx.setEvent('stage', 'captured');
        } catch (error) {
          seen = error;
          throw error;
        }
        return 'unreachable';
      },
    });
    const handle = await enqueue(t.pool, stale, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [stale], pollInterval: 20 }));
    await worker.start();
    await entered.wait;
    // another claim took the task over (its token moved on) while this run was between calls
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${handle.id}::bigint`.execute(t.db);
    const lost = nextEvent(worker, 'task:lease-lost', ({ task }) => task.id === handle.id);
    proceed.open();
    await lost;
    await worker.stop({ timeout: 0 });
    expect(seen).toBeInstanceOf(LeaseLostError);
    expect(await eventRows(handle.id)).toEqual([]);
    expect(await eventSteps(handle.id)).toBe(0);
    expect(await getEvent(t.pool, handle, 'stage', { timeout: 0 })).toBeUndefined();
  });

  it('a key or value that cannot be an event is refused at the call with a typed error, and nothing is stored', async () => {
    const refused: [string, string | undefined][] = [];
    const bad = defineTask('event-bad-input', {
      handler: async (_p: object, ctx: TaskContext) => {
        const attempts: [string, () => Promise<void>][] = [
          ['empty key', () => ctx.setEvent('', 1)],
          ['long key', () => ctx.setEvent('k'.repeat(201), 1)],
          ['not a key', () => ctx.setEvent(42 as unknown as string, 1)],
          ['a Date', () => ctx.setEvent('k', new Date())],
          ['a BigInt', () => ctx.setEvent('k', { n: 1n })],
          ['undefined', () => ctx.setEvent('k', undefined)],
        ];
        for (const [what, call] of attempts) {
          try {
            await call();
            refused.push([what, undefined]);
          } catch (error) {
            refused.push([what, isLeaseholdError(error) ? error.code : String(error)]);
          }
        }
        // the refused calls took no record: a good one after them is the run's first
        await ctx.setEvent('k', null);
        return 'ok';
      },
    });
    const handle = await enqueue(t.pool, bad, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [bad], pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toBe('ok');
    await worker.stop();
    expect(refused).toEqual([
      ['empty key', 'CONFIG'],
      ['long key', 'CONFIG'],
      ['not a key', 'CONFIG'],
      ['a Date', 'PERMANENT'],
      ['a BigInt', 'PERMANENT'],
      ['undefined', 'PERMANENT'],
    ]);
    // JSON null is a value: set, and told apart from "not set"
    expect(await eventRows(handle.id)).toEqual([{ key: 'k', value: null, lease_version: '1' }]);
    expect(await getEvent(t.pool, handle, 'k', { timeout: 0 })).toBeNull();
    expect((await getTask(t.pool, handle))?.steps.map((s) => [s.name, s.position])).toEqual([['event:k#1', 0]]);
  });

  it('getEvent: a timeout resolves undefined, an unknown task is TaskNotFoundError, bad options are ConfigErrors', async () => {
    const idle = defineTask('event-idle', { handler: () => 'never run' });
    const handle = await enqueue(t.pool, idle, {});
    const started = Date.now();
    expect(await getEvent(t.pool, handle, 'stage', { timeout: '300ms' })).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await getEvent(t.pool, handle, 'stage', { timeout: 0 })).toBeUndefined();
    await expect(getEvent(t.pool, '424242', 'stage', { timeout: '5s' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(getEvent(t.pool, '424242', 'stage', { timeout: 0 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(getEvent(t.pool, 'abc', 'stage')).rejects.toMatchObject({ code: 'CONFIG', option: 'id' });
    await expect(getEvent(t.pool, handle, '')).rejects.toMatchObject({ code: 'CONFIG', option: 'event' });
    await expect(getEvent(t.pool, handle, 'stage', { timout: '1s' } as never)).rejects.toMatchObject({ code: 'CONFIG' });
    await expect(getEvent(t.pool, handle, 'stage', { timeout: '-1s' })).rejects.toMatchObject({ code: 'CONFIG', option: 'timeout' });
    // an abort ends the wait with its reason
    const controller = new AbortController();
    const waiting = getEvent(t.pool, handle, 'stage', { timeout: '60s', signal: controller.signal });
    controller.abort(new Error('page closed'));
    await expect(waiting).rejects.toThrow('page closed');
  });

  it('a changed workflow that moves an event is caught on replay (NonDeterminismError); events go with their task when it is purged', async () => {
    const go = defineSignal('go');
    const v1 = defineTask('event-moved', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.setEvent('stage', 'started');
        await ctx.waitForSignal(go);
        return 'v1';
      },
    });
    const handle = await enqueue(t.pool, v1, {});
    const first = track(createWorker({ pool: t.pool, tasks: [v1], pollInterval: 20 }));
    const parked = nextEvent(first, 'task:suspended', ({ task }) => task.id === handle.id);
    await first.start();
    await parked;
    await first.stop();

    // the new code makes a step before the event: the event recorded at position 0 moved
    const v2 = defineTask('event-moved', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('prepare', () => 1);
        await ctx.setEvent('stage', 'started');
        await ctx.waitForSignal(go);
        return 'v2';
      },
    });
    const second = track(createWorker({ pool: t.pool, tasks: [v2], pollInterval: 20 }));
    const dead = nextEvent(second, 'task:dead', ({ task }) => task.id === handle.id);
    await second.start();
    await sendSignal(t.pool, handle, go);
    const { error } = await dead;
    await second.stop();
    expect(error).toMatchObject({ code: 'NON_DETERMINISM' });
    expect(error.message).toContain('event:stage#1');

    // a finished run's events are deleted with it (the task table's delete trigger)
    const quick = defineTask('event-purged', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.setEvent('stage', 'finished');
        return 'ok';
      },
    });
    const done = await enqueue(t.pool, quick, {});
    const third = track(createWorker({ pool: t.pool, tasks: [quick], pollInterval: 20 }));
    const succeeded = nextEvent(third, 'task:succeeded', ({ task }) => task.id === done.id);
    await third.start();
    await succeeded;
    await third.stop();
    await expect.poll(() => readTask(t.db, done.id).then((r) => r.status), { timeout: 10_000 }).toBe('done');
    expect(await eventRows(done.id)).toHaveLength(1);
    expect(await leasePurgeDone(t.pool, taskTable(), 0, 1_000)).toBeGreaterThanOrEqual(1);
    expect(await eventRows(done.id)).toEqual([]);
    await expect(getEvent(t.pool, done, 'stage', { timeout: 0 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // and a TRUNCATE of the task table takes them too
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_event`.execute(t.db);
    expect(rows[0]!.n).toBe(0);
  });
});
