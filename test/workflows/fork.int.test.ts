import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  createWorker,
  defineSignal,
  defineTask,
  enqueue,
  forkTask,
  getEvent,
  getTask,
  sendSignal,
  TaskNotFoundError,
  waitForResult,
  type TaskContext,
} from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

const count = async (where: string) => {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE ${sql.raw(where)}`.execute(t.db);
  return Number(rows[0]!.n);
};

describe('forkTask', () => {
  it('at a plain step: the steps before it are kept, it and the later ones run again', async () => {
    const runs: string[] = [];
    let n = 0;
    const flow = defineTask('fork-plain', {
      handler: async (p: { base: number }, ctx: TaskContext) => {
        const a = await ctx.step('a', () => (runs.push('a'), p.base + ++n));
        const b = await ctx.step('b', () => (runs.push('b'), a * 10));
        const c = await ctx.step('c', () => (runs.push('c'), b + 1));
        return [a, b, c];
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, { base: 100 });
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toEqual([101, 1010, 1011]);
    const before = await getTask(t.pool, original);

    const fork = await forkTask(t.pool, original, { fromStep: 'b' });
    expect(fork.id).not.toBe(original.id);
    // a from the original's record (101); were the fork's lease_version left at 0, its first claim
    // would skip the replay read and run a again (102)
    expect(await waitForResult(t.pool, fork, { timeout: '10s' })).toEqual([101, 1010, 1011]);
    expect(runs).toEqual(['a', 'b', 'c', 'b', 'c']);

    const info = await getTask(t.pool, fork);
    expect(info).toMatchObject({ name: 'fork-plain', status: 'done', payload: { base: 100 }, forkedFrom: original.id, parentId: null, attempts: 1 });
    expect(info!.steps.map((s) => [s.name, s.position])).toEqual([['a', 0], ['b', 1], ['c', 2]]);
    // the copied record keeps its time; the fork's own are its first claim's (version 2)
    expect(info!.steps[0]!.createdAt).toEqual(before!.steps[0]!.createdAt);
    expect(info!.steps.map((s) => s.leaseVersion)).toEqual([1, 2, 2]);
    // the original is read, not changed
    const after = await getTask(t.pool, original);
    expect(after).toMatchObject({ status: 'done', forkedFrom: null, attempts: before!.attempts });
    expect(after!.steps).toEqual(before!.steps);
    await worker.stop();
  });

  it('copies name, payload, version, priority, attempt limit and limit key; pending at lease_version 1', async () => {
    const flow = defineTask('fork-columns', {
      version: 3,
      maxAttempts: 4,
      handler: async (_p: object, ctx: TaskContext) => ctx.step('only', () => 1),
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, { x: 1 }, { priority: 7 });
    await waitForResult(t.pool, original, { timeout: '10s' });
    await worker.stop();
    const fork = await forkTask(t.pool, original.id, { fromStep: 'only' });
    const { rows } = await sql<Record<string, unknown>>`
      SELECT name, payload, version, priority, max_attempts, flow, flow_key, status, attempts, lease_version::int AS lease_version, forked_from::text AS forked_from, group_key, dedup_key, parent_id
      FROM leasehold.task WHERE id = ${fork.id}
    `.execute(t.db);
    expect(rows[0]).toEqual({
      name: 'fork-columns', payload: { x: 1 }, version: 3, priority: 7, max_attempts: 4, flow: null, flow_key: null,
      status: 'pending', attempts: 0, lease_version: 1, forked_from: original.id, group_key: null, dedup_key: null, parent_id: null,
    });
  });

  it('at a database step: the earlier database steps are not run again', async () => {
    await sql`CREATE TABLE fork_ledger (id serial PRIMARY KEY, entry text NOT NULL)`.execute(t.db);
    const flow = defineTask('fork-db', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.dbStep('reserve', async (client) => void (await client.query(`INSERT INTO fork_ledger (entry) VALUES ('reserve')`)));
        await ctx.dbStep('charge', async (client) => void (await client.query(`INSERT INTO fork_ledger (entry) VALUES ('charge')`)));
        return ctx.dbStep('count', async (client) => Number(((await client.query('SELECT count(*) AS n FROM fork_ledger')).rows[0] as { n: string }).n));
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toBe(2);
    const fork = await forkTask(t.pool, original, { fromStep: 'charge' });
    expect(await waitForResult(t.pool, fork, { timeout: '10s' })).toBe(3);
    const { rows } = await sql<{ entry: string }>`SELECT entry FROM fork_ledger ORDER BY id`.execute(t.db);
    expect(rows.map((r) => r.entry)).toEqual(['reserve', 'charge', 'charge']);
    await worker.stop();
  });

  it('at a sleep: the fork sleeps afresh; past it, the sleep is kept done', async () => {
    const flow = defineTask('fork-sleep', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('before', () => 1);
        await ctx.sleep('nap', '400ms');
        return ctx.step('after', () => 2);
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toBe(2);
    const originalNap = (await getTask(t.pool, original))!.steps.find((s) => s.name === 'nap')!;

    const atNap = await forkTask(t.pool, original, { fromStep: 'nap' });
    const forkedAt = (await getTask(t.pool, atNap))!.createdAt;
    expect(await waitForResult(t.pool, atNap, { timeout: '10s' })).toBe(2);
    const nap = (await getTask(t.pool, atNap))!.steps.find((s) => s.name === 'nap')!;
    expect(nap.createdAt.getTime()).toBeGreaterThanOrEqual(forkedAt.getTime());
    expect(nap.doneAt!.getTime() - nap.createdAt.getTime()).toBeGreaterThanOrEqual(350);

    const suspended: string[] = [];
    worker.on('task:suspended', ({ task }) => void suspended.push(task.id));
    const pastNap = await forkTask(t.pool, original, { fromStep: 'after' });
    expect(await waitForResult(t.pool, pastNap, { timeout: '10s' })).toBe(2);
    expect(suspended).not.toContain(pastNap.id);
    const kept = (await getTask(t.pool, pastNap))!.steps.find((s) => s.name === 'nap')!;
    expect(kept).toMatchObject({ done: true, createdAt: originalNap.createdAt, doneAt: originalNap.doneAt });
    await worker.stop();
  });

  it('at a spawn: children spawned before stay the original\'s and are not spawned again; the spawn itself spawns anew', async () => {
    const double = defineTask('fork-double', { handler: (p: { n: number }) => p.n * 2 });
    const flow = defineTask('fork-spawn', {
      handler: async (_p: object, ctx: TaskContext) => {
        const first = await ctx.waitForChildren(await ctx.spawn('first', double, [{ payload: { n: 1 } }, { payload: { n: 2 } }]));
        const second = await ctx.waitForChildren(await ctx.spawn('second', double, [{ payload: { n: 10 } }]));
        return [...first, ...second];
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow, double], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toEqual([2, 4, 20]);
    expect(await count(`name = 'fork-double'`)).toBe(3);

    const atSecond = await forkTask(t.pool, original, { fromStep: 'second' });
    expect(await waitForResult(t.pool, atSecond, { timeout: '10s' })).toEqual([2, 4, 20]);
    // 'first' not spawned again; 'second' spawned one child of the fork
    expect(await count(`name = 'fork-double'`)).toBe(4);
    expect(await count(`name = 'fork-double' AND parent_id = ${atSecond.id}`)).toBe(1);
    const info = await getTask(t.pool, atSecond);
    expect(info!.steps.find((s) => s.name === 'first')!.result).toEqual((await getTask(t.pool, original))!.steps.find((s) => s.name === 'first')!.result);

    const atFirst = await forkTask(t.pool, original, { fromStep: 'first' });
    expect(await waitForResult(t.pool, atFirst, { timeout: '10s' })).toEqual([2, 4, 20]);
    expect(await count(`name = 'fork-double' AND parent_id = ${atFirst.id}`)).toBe(3);
    expect(await count(`name = 'fork-double' AND parent_id = ${original.id}`)).toBe(3);
    await worker.stop();
  });

  it('refuses while a child spawned before the point has not ended', async () => {
    const stuck = defineTask('fork-stuck-child', { handler: () => 1 });
    const flow = defineTask('fork-spawn-open', {
      handler: async (_p: object, ctx: TaskContext) => {
        const kids = await ctx.spawn('kids', stuck, [{ payload: {} }]);
        await ctx.step('between', () => 1);
        return ctx.waitForChildren(kids);
      },
    });
    // no worker for the child: it stays pending
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    const parked = nextEvent(worker, 'task:suspended', ({ task }) => task.id === original.id);
    await parked;
    const tasks = await count('true');
    const error = await forkTask(t.pool, original, { fromStep: 'between' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/have not ended/);
    expect(await count('true')).toBe(tasks);
    // at the spawn itself: allowed, the fork spawns its own
    const fork = await forkTask(t.pool, original, { fromStep: 'kids' });
    expect(fork.id).toBeTruthy();
    await worker.stop();
  });

  it('at a signal wait: the earlier waits keep their payloads, the fork waits for a new signal; signals are not copied', async () => {
    const approve = defineSignal<{ by: string }>('fork-approve');
    const flow = defineTask('fork-signal', {
      handler: async (_p: object, ctx: TaskContext) => {
        const one = await ctx.waitForSignal(approve, { step: 'one' });
        const two = await ctx.waitForSignal(approve, { step: 'two' });
        return [one, two].map((r) => (r.timedOut ? null : r.payload.by));
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    await sendSignal(t.pool, original, approve, { by: 'ann' });
    await sendSignal(t.pool, original, approve, { by: 'bob' });
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toEqual(['ann', 'bob']);

    const fork = await forkTask(t.pool, original, { fromStep: 'two' });
    const parked = nextEvent(worker, 'task:suspended', ({ task }) => task.id === fork.id);
    await parked;
    const waiting = await getTask(t.pool, fork);
    expect(waiting).toMatchObject({ status: 'waiting', waitFor: 'signal:fork-approve', signals: [] });
    await sendSignal(t.pool, fork, approve, { by: 'cy' });
    expect(await waitForResult(t.pool, fork, { timeout: '10s' })).toEqual(['ann', 'cy']);
    await worker.stop();
  });

  it('keeps the patch markers taken before the point, not those after', async () => {
    const runs: string[] = [];
    const flow = defineTask('fork-patch', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('a', () => 1);
        const b = (await ctx.patched('new-b')) ? await ctx.step('b2', () => 'new') : await ctx.step('b1', () => 'old');
        const c = await ctx.step('c', () => (runs.push('c'), 'c'));
        const d = (await ctx.patched('new-d')) ? 'd-new' : 'd-old';
        return [b, c, d];
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toEqual(['new', 'c', 'd-new']);
    // no worker while the copy is read: a running one could claim the fork and record c first
    await worker.stop();
    // were patch:new-b not copied, the fork's replay would answer false past b2's record and
    // take b1, which is not what it recorded
    const fork = await forkTask(t.pool, original, { fromStep: 'c' });
    const copied = await getTask(t.pool, fork);
    expect(copied!.steps.map((s) => s.name).sort()).toEqual(['a', 'b2', 'patch:new-b']);
    const second = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await second.start();
    expect(await waitForResult(t.pool, fork, { timeout: '10s' })).toEqual(['new', 'c', 'd-new']);
    expect(runs).toEqual(['c', 'c']);
    expect((await getTask(t.pool, fork))!.status).toBe('done');
    await second.stop();
  });

  it('carries the progress events as the records before the point left them', async () => {
    const flow = defineTask('fork-events', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.setEvent('stage', 'one');
        await ctx.setEvent('other', 1);
        await ctx.step('a', () => 1);
        await ctx.setEvent('stage', 'two');
        await ctx.step('b', () => 2);
        await ctx.setEvent('stage', 'three');
        await ctx.setEvent('late', true);
        return 'ok';
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toBe('ok');
    await worker.stop();

    const fork = await forkTask(t.pool, original, { fromStep: 'b' });
    expect(await getEvent(t.pool, fork, 'stage')).toBe('two');
    expect(await getEvent(t.pool, fork, 'other')).toBe(1);
    expect(await getEvent(t.pool, fork, 'late', { timeout: 0 })).toBeUndefined();
    const second = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await second.start();
    expect(await waitForResult(t.pool, fork, { timeout: '10s' })).toBe('ok');
    expect(await getEvent(t.pool, fork, 'stage')).toBe('three');
    expect(await getEvent(t.pool, fork, 'late')).toBe(true);
    await second.stop();
  });

  it('refuses an unknown step, a patch marker, an ordered task and a missing one, inserting nothing', async () => {
    const flow = defineTask('fork-refuse', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('a', () => 1);
        await ctx.patched('p');
        return ctx.step('b', () => 2);
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    const ordered = await enqueue(t.pool, flow, {}, { groupKey: 'g1' });
    await waitForResult(t.pool, original, { timeout: '10s' });
    await waitForResult(t.pool, ordered, { timeout: '10s' });
    const tasks = await count('true');

    const unknown = await forkTask(t.pool, original, { fromStep: 'nope' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ConfigError);
    expect(unknown).toMatchObject({ option: 'fromStep' });
    expect((unknown as Error).message).toContain('"nope"');
    expect((unknown as Error).message).toContain('"a", "b"');
    const marker = await forkTask(t.pool, original, { fromStep: 'patch:p' }).catch((e: unknown) => e);
    expect(marker).toBeInstanceOf(ConfigError);
    const group = await forkTask(t.pool, ordered, { fromStep: 'a' }).catch((e: unknown) => e);
    expect(group).toBeInstanceOf(ConfigError);
    expect((group as Error).message).toMatch(/ordered/);
    const missing = await forkTask(t.pool, '999999999', { fromStep: 'a' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TaskNotFoundError);
    expect(await count('true')).toBe(tasks);
    expect(await count(`forked_from IS NOT NULL AND name = 'fork-refuse'`)).toBe(0);
    await worker.stop();
  });

  it("joins the caller's transaction: rolled back, nothing is left", async () => {
    const flow = defineTask('fork-trx', { handler: async (_p: object, ctx: TaskContext) => ctx.step('a', () => 1) });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    await waitForResult(t.pool, original, { timeout: '10s' });
    await worker.stop();
    let forked = '';
    await t.db
      .transaction()
      .execute(async (trx) => {
        forked = (await forkTask(trx, original, { fromStep: 'a' })).id;
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(forked).not.toBe('');
    await expect(readTask(t.db, forked)).rejects.toThrow(/no task/);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task_step WHERE task_id = ${forked}`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(0);
  });
});
