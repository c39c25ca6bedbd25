import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  cancelTask,
  ChildTaskError,
  createWorker,
  defineSignal,
  defineTask,
  enqueue,
  getTask,
  isLeaseholdError,
  PermanentError,
  sendSignal,
  waitForResult,
  type TaskContext,
} from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

const status = (id: string) => readTask(t.db, id).then((r) => r.status as string);

describe('durable sleep', () => {
  it('parks without a slot or an attempt, survives a worker restart, and resumes past the sleep', async () => {
    const log: string[] = [];
    const napper = defineTask('napper', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('before', () => void log.push('before'));
        await ctx.sleep('nap', '1500ms');
        await ctx.step('after', () => void log.push('after'));
        return ctx.task.attempts;
      },
    });
    const quick = defineTask('quick', { handler: (p: { n: number }) => p.n });
    const nap = await enqueue(t.pool, napper, {});
    const first = track(createWorker({ pool: t.pool, tasks: [napper, quick], concurrency: 1, pollInterval: 20 }));
    const parked = nextEvent(first, 'task:suspended', ({ task }) => task.id === nap.id);
    await first.start();
    await parked;
    expect(await readTask(t.db, nap.id)).toMatchObject({ status: 'waiting', attempts: 0 });
    // the sleeping task holds no slot: a worker of concurrency 1 runs others meanwhile
    const others = await Promise.all([1, 2, 3].map((n) => enqueue(t.pool, quick, { n })));
    expect(await Promise.all(others.map((h) => waitForResult(t.pool, h, { timeout: '10s' })))).toEqual([1, 2, 3]);
    expect(await status(nap.id)).toBe('waiting');
    await first.stop();

    const second = track(createWorker({ pool: t.pool, tasks: [napper, quick], concurrency: 1, pollInterval: 20 }));
    await second.start();
    // one attempt in all: the sleep gave back the attempt its run took
    expect(await waitForResult(t.pool, nap, { timeout: '20s' })).toBe(1);
    await second.stop();
    expect(log).toEqual(['before', 'after']);
    const info = await getTask(t.pool, nap);
    expect(info?.steps.map((s) => [s.name, s.done])).toEqual([
      ['before', true],
      ['nap', true],
      ['after', true],
    ]);
    const napStep = info!.steps[1]!;
    expect(napStep.doneAt!.getTime() - napStep.createdAt.getTime()).toBeGreaterThanOrEqual(1400);
  });
});

describe('child tasks', () => {
  it('fans out and in: the parent parks holding no slot and resumes with typed results', async () => {
    const double = defineTask('double', { handler: (p: { n: number }) => p.n * 2 });
    const parent = defineTask('fan', {
      handler: async (p: { count: number }, ctx: TaskContext) => {
        const kids = await ctx.spawn(
          'kids',
          double,
          Array.from({ length: p.count }, (_, n) => ({ payload: { n } })),
        );
        const doubled = await ctx.waitForChildren(kids);
        return doubled.reduce((a, b) => a + b, 0);
      },
    });
    const handle = await enqueue(t.pool, parent, { count: 50 });
    // concurrency 1: the children can run only because the waiting parent gave its slot back
    const worker = track(createWorker({ pool: t.pool, tasks: [parent, double], concurrency: 1, pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, handle, { timeout: '30s' })).toBe(2 * ((49 * 50) / 2));
    await worker.stop();
    const info = await getTask(t.pool, handle);
    expect(info?.children).toHaveLength(50);
    expect(info?.children.every((c) => c.status === 'done')).toBe(true);
    expect(await readTask(t.db, handle.id)).toMatchObject({ attempts: 1 });
  });

  it('a dead child reaches the parent as a ChildTaskError it can catch', async () => {
    const flaky = defineTask('flaky-child', {
      handler: (p: { fail: boolean }) => {
        if (p.fail) throw new PermanentError('card declined');
        return 'ok';
      },
    });
    const parent = defineTask('compensating-parent', {
      handler: async (_p: object, ctx: TaskContext) => {
        const kids = await ctx.spawn('kids', flaky, [{ payload: { fail: false } }, { payload: { fail: true } }]);
        try {
          await ctx.waitForChildren(kids);
          return 'all ok';
        } catch (error) {
          if (!(error instanceof ChildTaskError)) throw error;
          await ctx.step('compensate', () => 'refunded');
          return error.failures.map((f) => `${f.status}: ${f.error?.split('\n', 1)[0]}`);
        }
      },
    });
    const handle = await enqueue(t.pool, parent, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [parent, flaky], pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual(['dead: PermanentError: card declined']);
    await worker.stop();
  });
});

describe('signals', () => {
  const approved = defineSignal<{ by: string }>('approved');

  it('a send rolled back is never delivered; a send before the wait is; a timeout resumes with timedOut', async () => {
    const approval = defineTask('approval', {
      handler: async (p: { timeout: string }, ctx: TaskContext) => {
        const first = await ctx.waitForSignal(approved, { timeout: p.timeout });
        return first.timedOut ? 'timed out' : `approved by ${first.payload.by}`;
      },
    });
    const early = await enqueue(t.pool, approval, { timeout: '1h' });
    const waits = await enqueue(t.pool, approval, { timeout: '1h' });
    const times = await enqueue(t.pool, approval, { timeout: '800ms' });

    // sent before any wait began: kept for it
    await sendSignal(t.pool, early, approved, { by: 'ann' });
    // rolled back with the sender's transaction: never delivered
    await t.db
      .transaction()
      .execute(async (trx) => {
        await sendSignal(trx, waits, approved, { by: 'mallory' });
        throw new Error('rolled back');
      })
      .catch(() => undefined);

    const worker = track(createWorker({ pool: t.pool, tasks: [approval], pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, early, { timeout: '20s' })).toBe('approved by ann');
    expect(await waitForResult(t.pool, times, { timeout: '20s' })).toBe('timed out');
    await expect.poll(() => status(waits.id), { timeout: 20_000 }).toBe('waiting');
    // still waiting for a signal that was rolled back; now one commits in a transaction
    await t.db.transaction().execute(async (trx) => {
      await sendSignal(trx, waits, approved, { by: 'bob' });
    });
    expect(await waitForResult(t.pool, waits, { timeout: '20s' })).toBe('approved by bob');
    await worker.stop();
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task_signal WHERE payload->>'by' = 'mallory'`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('sendSignal checks its input and reports tasks that ended or do not exist', async () => {
    const noop = defineTask('noop-signalled', { handler: () => 'done' });
    const handle = await enqueue(t.pool, noop, {});
    await expect(sendSignal(t.pool, '424242', approved, { by: 'x' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(sendSignal(t.pool, 'abc', approved, { by: 'x' })).rejects.toMatchObject({ code: 'CONFIG', option: 'id' });
    await expect(sendSignal(t.pool, handle, approved, { by: 1n } as unknown as { by: string })).rejects.toMatchObject({ code: 'CONFIG', option: 'payload' });
    const worker = track(createWorker({ pool: t.pool, tasks: [noop], pollInterval: 20 }));
    await worker.start();
    await waitForResult(t.pool, handle, { timeout: '20s' });
    await worker.stop();
    expect(await sendSignal(t.pool, handle, approved, { by: 'late' })).toEqual({ delivered: false, status: 'done' });
  });

  it('a signal to a dead task is stored for its retry (delivered: true); getTask of an unknown id is null (issue 34: both documented)', async () => {
    const noop = defineTask('noop-dead-signalled', { handler: () => 'done' });
    const handle = await enqueue(t.pool, noop, {});
    await sql`UPDATE leasehold.task SET status = 'dead', last_error = 'gave up' WHERE id = ${handle.id}::bigint`.execute(t.db);
    expect(await sendSignal(t.pool, handle, approved, { by: 'ann' })).toEqual({ delivered: true, status: 'dead' });
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_signal WHERE task_id = ${handle.id}::bigint`.execute(t.db);
    expect(rows[0]!.n).toBe(1);
    expect(await getTask(t.pool, '424242')).toBeNull();
  });
});

describe('cancellation', () => {
  it('a running task sees its signal abort with CancelledError within a heartbeat; its late finalize is refused; it ends cancelled', async () => {
    const entered = gate();
    let seen: unknown;
    let aborted = 0;
    const stubborn = defineTask('stubborn', {
      lease: '3s',
      handler: async (_p: object, ctx: TaskContext) => {
        const t0 = Date.now();
        entered.open();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = Date.now() - t0;
        seen = ctx.signal.reason;
        return 'finished anyway';
      },
    });
    const handle = await enqueue(t.pool, stubborn, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [stubborn], pollInterval: 20, heartbeatInterval: '200ms' }));
    const cancelled = nextEvent(worker, 'task:cancelled', ({ task }) => task.id === handle.id);
    await worker.start();
    await entered.wait;
    const before = Date.now();
    expect(await cancelTask(t.pool, handle, { reason: 'customer left' })).toEqual({ cancelled: [handle.id] });
    await cancelled;
    expect(Date.now() - before).toBeLessThan(200 * 2 + 5_000); // one heartbeat interval, plus scheduling slack on a busy machine
    expect(isLeaseholdError(seen, 'CANCELLED')).toBe(true);
    expect(aborted).toBeGreaterThan(0);
    await worker.stop();
    const row = await getTask(t.pool, handle);
    expect(row).toMatchObject({ status: 'cancelled', resolution: 'cancelled: customer left', result: undefined });
    await expect(waitForResult(t.pool, handle)).rejects.toMatchObject({ code: 'TASK_FAILED', status: 'cancelled' });
    // a second cancel changes nothing
    expect(await cancelTask(t.pool, handle)).toEqual({ cancelled: [] });
  });

  it("a step that ends after its task was cancelled records nothing and reports the cancel, not a lost lease", async () => {
    const inside = gate();
    const release = gate();
    let after = false;
    const flow = defineTask('cancelled-mid-step', {
      lease: '30s',
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('slow', async () => {
          inside.open();
          await release.wait;
          return 1;
        });
        after = true;
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    // a heartbeat too rare to notice first: the step's refused record must tell
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20, heartbeatInterval: '20s' }));
    const lost: string[] = [];
    worker.on('task:lease-lost', ({ task }) => lost.push(task.id));
    const cancelled = nextEvent(worker, 'task:cancelled', ({ task }) => task.id === handle.id);
    await worker.start();
    await inside.wait;
    await cancelTask(t.pool, handle);
    release.open();
    await cancelled;
    await worker.stop();
    expect(after).toBe(false);
    expect(lost).toEqual([]);
    expect(await getTask(t.pool, handle)).toMatchObject({ status: 'cancelled', steps: [] });
  });

  it('a task cancelled while its handler returns reports the cancel, not a lost lease', async () => {
    const inside = gate();
    const release = gate();
    const job = defineTask('cancelled-at-return', {
      lease: '30s',
      handler: async () => {
        inside.open();
        await release.wait;
        return 'finished';
      },
    });
    const handle = await enqueue(t.pool, job, {});
    // a heartbeat too rare to notice first: the refused finalize must tell
    const worker = track(createWorker({ pool: t.pool, tasks: [job], pollInterval: 20, heartbeatInterval: '20s' }));
    const ended: string[] = [];
    worker.on('task:lease-lost', () => void ended.push('lease-lost'));
    worker.on('task:cancelled', () => void ended.push('cancelled'));
    await worker.start();
    await inside.wait;
    await cancelTask(t.pool, handle);
    release.open();
    await expect.poll(() => ended.length).toBeGreaterThan(0);
    await worker.stop();
    expect(ended).toEqual(['cancelled']);
    expect(await getTask(t.pool, handle)).toMatchObject({ status: 'cancelled', result: undefined });
  });

  it('cancels pending, sleeping and waiting tasks at once, and the children of a cancelled parent', async () => {
    const child = defineTask('slow-child', { handler: async (_p: object, ctx: TaskContext) => ctx.sleep('forever', '1h') });
    const parent = defineTask('waiting-parent', {
      handler: async (_p: object, ctx: TaskContext) => {
        const kids = await ctx.spawn('kids', child, [{ payload: {} }, { payload: {} }]);
        await ctx.waitForChildren(kids);
      },
    });
    const pendingOne = await enqueue(t.pool, child, {}, { delay: '1h' });
    const handle = await enqueue(t.pool, parent, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [parent, child], pollInterval: 20 }));
    await worker.start();
    await expect
      .poll(async () => {
        const i = await getTask(t.pool, handle);
        return [i?.status, ...(i?.children.map((c) => c.status) ?? [])];
      }, { timeout: 20_000 })
      .toEqual(['waiting', 'waiting', 'waiting']);
    const info = await getTask(t.pool, handle);
    await worker.stop();
    const kids = info!.children.map((c) => c.id);
    expect((await cancelTask(t.pool, handle, { reason: 'order withdrawn' })).cancelled).toEqual([handle.id, ...kids]);
    expect((await cancelTask(t.pool, pendingOne)).cancelled).toEqual([pendingOne.id]);
    for (const id of [handle.id, ...kids, pendingOne.id]) expect(await status(id)).toBe('cancelled');
    await expect(cancelTask(t.pool, '999999')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
