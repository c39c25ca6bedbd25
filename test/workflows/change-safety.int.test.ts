import { describe, expect, it } from 'vitest';
import {
  createWorker,
  defineSignal,
  defineTask,
  enqueue,
  getTask,
  leaseRetryDeadMany,
  sendSignal,
  taskTable,
  waitForResult,
  type TaskContext,
  type TaskDefinition,
} from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

// A deploy under a running workflow, for each kind of change docs/workflows.md ("Changing
// workflow code") lists: the run parks on the old code, the worker stops, a worker with the new
// code starts, and the run resumes on it. Each change either replays (the documented compatible
// ones) or fails the run with NonDeterminismError — dead, every recorded step kept, no function
// run again — and deploying code that replays lets `dead retry` finish it.

const t = useTestDatabase();
const track = useWorkers();
const go = defineSignal<{ n: number }>('go');

type Handler = (payload: { n: number }, ctx: TaskContext) => Promise<unknown>;

/** Calls of each step's function, by step name, across both deploys of one case. */
function calls() {
  const counts = new Map<string, number>();
  const run = (name: string) => () => {
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return { by: name };
  };
  return { run, counts };
}

let serial = 0;

/**
 * Runs `before` until the run parks on the signal wait (or, with `parkOn: 'sleep'` / 'children',
 * on those), deploys `after` and wakes the run (sends the signal). Resolves with the task's id.
 */
async function deploy(before: Handler, after: Handler, options: { parkOn?: 'signal' | 'sleep' | 'children'; extraTasks?: TaskDefinition<never>[] } = {}) {
  const name = `flow-${++serial}`;
  const oldFlow = defineTask(name, { handler: before });
  const newFlow = defineTask(name, { handler: after });
  const handle = await enqueue(t.pool, oldFlow, { n: 7 });
  const first = track(createWorker({ pool: t.pool, tasks: [oldFlow], concurrency: 2, pollInterval: 50 }));
  const parked = nextEvent(first, 'task:suspended', ({ task }) => task.id === handle.id);
  await first.start();
  await parked;
  await first.stop();
  const second = track(createWorker({ pool: t.pool, tasks: [newFlow, ...((options.extraTasks ?? []) as TaskDefinition<unknown>[])], concurrency: 2, pollInterval: 50 }));
  await second.start();
  if ((options.parkOn ?? 'signal') === 'signal') await sendSignal(t.pool, handle, go, { n: 1 });
  return { handle, worker: second, name };
}

/** The run went dead with a NonDeterminismError naming these; its steps are all still there. */
async function expectNonDeterministic(id: string, parts: string[]) {
  const deadline = Date.now() + 20_000;
  let row = await readTask(t.db, id);
  while (row.status !== 'dead' && row.status !== 'done' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    row = await readTask(t.db, id);
  }
  expect(row.status).toBe('dead');
  expect(row.lastError).toMatch(/^NonDeterminismError: /);
  for (const part of parts) expect(row.lastError).toContain(part);
  // one attempt, spent once: nothing loops
  expect(row.attempts).toBe(1);
  return row;
}

async function stepNames(id: string) {
  return (await getTask(t.pool, { id }))!.steps.map((s) => s.name);
}

describe('a deploy under a running workflow', () => {
  // the code before every deploy of the failing cases: two steps, a signal wait, one more step
  const original = (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
    await ctx.step('a', c.run('a'));
    await ctx.step('b', c.run('b'));
    await ctx.waitForSignal(go);
    return ctx.step('c', c.run('c'));
  };

  it.each([
    {
      change: 'steps in a new order',
      after: (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
        await ctx.step('b', c.run('b'));
        await ctx.step('a', c.run('a'));
        await ctx.waitForSignal(go);
        return ctx.step('c', c.run('c'));
      },
      reported: ['at position 0', 'recorded step "a"', 'asked for step "b"'],
    },
    {
      change: 'a renamed step',
      after: (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
        await ctx.step('a', c.run('a'));
        await ctx.step('b2', c.run('b2'));
        await ctx.waitForSignal(go);
        return ctx.step('c', c.run('c'));
      },
      reported: ['at position 1', 'recorded step "b"', 'asked for step "b2"'],
    },
    {
      change: "a step's name reused for a different function",
      after: (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
        await ctx.step('b', c.run('validate'));
        await ctx.step('a', c.run('a'));
        await ctx.waitForSignal(go);
        return ctx.step('c', c.run('c'));
      },
      reported: ['at position 0', 'recorded step "a"', 'asked for step "b"'],
    },
    {
      change: "a step's name reused for a different kind of call",
      after: (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
        await ctx.step('a', c.run('a'));
        await ctx.sleep('b', '1ms');
        await ctx.waitForSignal(go);
        return ctx.step('c', c.run('c'));
      },
      reported: ['at position 1', 'recorded step "b"', 'asked for sleep "b"'],
    },
    {
      change: 'a step inserted before recorded ones',
      after: (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
        await ctx.step('check', c.run('check'));
        await ctx.step('a', c.run('a'));
        await ctx.step('b', c.run('b'));
        await ctx.waitForSignal(go);
        return ctx.step('c', c.run('c'));
      },
      reported: ['at position 0', 'recorded step "a"', 'asked for step "check"'],
    },
    {
      change: 'a recorded step removed',
      after: (c: ReturnType<typeof calls>): Handler => async (_p, ctx) => {
        await ctx.step('a', c.run('a'));
        await ctx.waitForSignal(go);
        return ctx.step('c', c.run('c'));
      },
      reported: ['at position 1', 'recorded step "b"', 'asked for signal "signal:go"'],
    },
  ])('$change: the run goes dead with NonDeterminismError, runs nothing again, and finishes once compatible code is deployed', async ({ after, reported }) => {
    const c = calls();
    const { handle, worker, name } = await deploy(original(c), after(c));
    await expectNonDeterministic(handle.id, reported);
    await worker.stop();
    // no function ran twice, and none of the new code's did
    expect(Object.fromEntries(c.counts)).toEqual({ a: 1, b: 1 });
    expect(await stepNames(handle.id)).toEqual(['a', 'b', 'signal:go']);

    // deploy code that replays (here: the original again), retry the dead run: it finishes
    const fixed = track(createWorker({ pool: t.pool, tasks: [defineTask(name, { handler: original(c) })], concurrency: 2, pollInterval: 50 }));
    await fixed.start();
    expect((await leaseRetryDeadMany(t.pool, taskTable(), [handle.id], 'compatible code deployed')).changed).toEqual([handle.id]);
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'c' });
    await fixed.stop();
    expect(Object.fromEntries(c.counts)).toEqual({ a: 1, b: 1, c: 1 });
  });

  it('a changed step body at the same position replays its recorded result (the step is the same step)', async () => {
    const c = calls();
    const { handle, worker } = await deploy(original(c), async (_p, ctx) => {
      await ctx.step('a', c.run('a-fixed'));
      await ctx.step('b', c.run('b-fixed'));
      await ctx.waitForSignal(go);
      return ctx.step('c', c.run('c'));
    });
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'c' });
    await worker.stop();
    expect(Object.fromEntries(c.counts)).toEqual({ a: 1, b: 1, c: 1 });
  });

  it('steps added after the point the run reached run on the new code', async () => {
    const c = calls();
    const { handle, worker } = await deploy(original(c), async (_p, ctx) => {
      await ctx.step('a', c.run('a'));
      await ctx.step('b', c.run('b'));
      await ctx.waitForSignal(go);
      await ctx.step('notify', c.run('notify'));
      return ctx.step('c', c.run('c'));
    });
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'c' });
    await worker.stop();
    expect(Object.fromEntries(c.counts)).toEqual({ a: 1, b: 1, notify: 1, c: 1 });
    expect(await stepNames(handle.id)).toEqual(['a', 'b', 'signal:go', 'notify', 'c']);
  });

  it("a sleep's new length applies to new runs: a run in flight keeps the wake time it recorded", async () => {
    const c = calls();
    const { handle, worker } = await deploy(
      async (_p, ctx) => {
        await ctx.step('a', c.run('a'));
        await ctx.sleep('nap', '1500ms');
        return ctx.step('c', c.run('c'));
      },
      async (_p, ctx) => {
        await ctx.step('a', c.run('a'));
        await ctx.sleep('nap', '1h');
        return ctx.step('c', c.run('c'));
      },
      { parkOn: 'sleep' },
    );
    // woken at the recorded time, not an hour later
    expect(await waitForResult(t.pool, handle, { timeout: '30s' })).toEqual({ by: 'c' });
    await worker.stop();
    const nap = (await getTask(t.pool, handle))!.steps.find((s) => s.name === 'nap')!;
    expect(nap.wakeAt!.getTime() - nap.createdAt.getTime()).toBeLessThan(60_000);
  });

  it('a different number of children: the run goes dead rather than wait on children the new code did not spawn', async () => {
    const child = defineTask('change-safety-child', { handler: (p: { i: number }) => p.i });
    const spawnN = (count: number): Handler => async (_p, ctx) => {
      const kids = await ctx.spawn('kids', child, Array.from({ length: count }, (_, i) => ({ payload: { i } })));
      const results = await ctx.waitForChildren(kids);
      return results.length;
    };
    // the first worker does not run the children, so the parent parks waiting for them
    const { handle, worker } = await deploy(spawnN(3), spawnN(5), { parkOn: 'children', extraTasks: [child as TaskDefinition<never>] });
    await expectNonDeterministic(handle.id, ['spawn "kids"', 'it spawned 3 children, the code now spawns 5']);
    await worker.stop();
    const info = await getTask(t.pool, handle);
    expect(info!.steps.map((s) => s.name)).toEqual(['kids']);
  });

  it('ctx.patched: a run past the patch keeps the old path, a run that reaches it fresh takes the new one', async () => {
    const c = calls();
    const before: Handler = async (_p, ctx) => {
      await ctx.step('a', c.run('a'));
      await ctx.waitForSignal(go);
      return ctx.step('c', c.run('c'));
    };
    const after: Handler = async (_p, ctx) => {
      await ctx.step('a', c.run('a'));
      // the new code inserts a step before the wait, behind a patch
      if (await ctx.patched('audit')) await ctx.step('audit', c.run('audit'));
      await ctx.waitForSignal(go);
      if (await ctx.patched('receipt')) await ctx.step('receipt', c.run('receipt'));
      return ctx.step('c', c.run('c'));
    };
    const { handle, worker, name } = await deploy(before, after);
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'c' });
    // parked past 'audit' on the old code: the old path there; 'receipt' came after: new path
    expect(Object.fromEntries(c.counts)).toEqual({ a: 1, receipt: 1, c: 1 });
    const old = await getTask(t.pool, handle);
    expect(old!.steps.map((s) => [s.name, s.result])).toEqual(
      expect.arrayContaining([['patch:audit', false], ['patch:receipt', true]]),
    );

    // a new run on the new code takes both new paths
    const fresh = await enqueue(t.pool, defineTask(name, { handler: after }), { n: 1 });
    const parked = nextEvent(worker, 'task:suspended', ({ task }) => task.id === fresh.id);
    await parked;
    await sendSignal(t.pool, fresh, go, { n: 2 });
    expect(await waitForResult(t.pool, fresh, { timeout: '20s' })).toEqual({ by: 'c' });
    await worker.stop();
    expect(c.counts.get('audit')).toBe(1);
    expect(c.counts.get('receipt')).toBe(2);
  });

  it('a run recorded before replay checking (no positions stored) keeps running as before', async () => {
    const c = calls();
    const name = `flow-legacy`;
    const oldFlow = defineTask(name, { handler: original(c) });
    const handle = await enqueue(t.pool, oldFlow, { n: 1 });
    const first = track(createWorker({ pool: t.pool, tasks: [oldFlow], pollInterval: 50 }));
    const parked = nextEvent(first, 'task:suspended', ({ task }) => task.id === handle.id);
    await first.start();
    await parked;
    await first.stop();
    // as a release before core migration 11 recorded them
    await t.pool.query('UPDATE leasehold.task_step SET position = NULL, kind = NULL WHERE task_id = $1', [handle.id]);
    const reordered: Handler = async (_p, ctx) => {
      await ctx.step('b', c.run('b'));
      await ctx.step('a', c.run('a'));
      await ctx.waitForSignal(go);
      return ctx.step('c', c.run('c'));
    };
    const second = track(createWorker({ pool: t.pool, tasks: [defineTask(name, { handler: reordered })], pollInterval: 50 }));
    await second.start();
    await sendSignal(t.pool, handle, go, { n: 1 });
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'c' });
    await second.stop();
    expect(Object.fromEntries(c.counts)).toEqual({ a: 1, b: 1, c: 1 });
  });
});

describe('steps that run at the same time', () => {
  it('replay without a false alarm when branches of steps interleave differently from the first run', async () => {
    const c = calls();
    let slow = true;
    const flow = defineTask('branches', {
      handler: async (_p: object, ctx: TaskContext) => {
        // branch A's first step is slow only in the first run, so the first run records b1, b2
        // before a2, and the replay (all recorded, instant) asks a2 before b2
        const branchA = async () => {
          await ctx.step('a1', async () => {
            if (slow) await new Promise((r) => setTimeout(r, 300));
            return c.run('a1')();
          });
          await ctx.step('a2', c.run('a2'));
        };
        const branchB = async () => {
          await ctx.step('b1', c.run('b1'));
          await ctx.step('b2', c.run('b2'));
        };
        await Promise.all([branchA(), branchB()]);
        await ctx.waitForSignal(go);
        return ctx.step('end', c.run('end'));
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 50 }));
    const parked = nextEvent(worker, 'task:suspended', ({ task }) => task.id === handle.id);
    await worker.start();
    await parked;
    slow = false;
    await sendSignal(t.pool, handle, go, { n: 1 });
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'end' });
    await worker.stop();
    expect(Object.fromEntries(c.counts)).toEqual({ a1: 1, a2: 1, b1: 1, b2: 1, end: 1 });
  });

  it('still catch a removed step, when the handler returns: the run is not done', async () => {
    const c = calls();
    const both: Handler = async (_p, ctx) => {
      await Promise.all([ctx.step('x', c.run('x')), ctx.step('y', c.run('y'))]);
      await ctx.waitForSignal(go);
      return ctx.step('end', c.run('end'));
    };
    const onlyX: Handler = async (_p, ctx) => {
      await Promise.all([ctx.step('x', c.run('x')), ctx.step('z', c.run('z'))]);
      await ctx.waitForSignal(go);
      return ctx.step('end', c.run('end'));
    };
    const { handle, worker } = await deploy(both, onlyX);
    await expectNonDeterministic(handle.id, ['recorded step "y"', 'made no such call']);
    await worker.stop();
    // overlapping calls are checked by name and kind as they come, and for recorded calls never
    // made only once the handler returns: the new calls ran before that (docs/workflows.md)
    expect(Object.fromEntries(c.counts)).toEqual({ x: 1, y: 1, z: 1, end: 1 });
  });
});

describe('versions', () => {
  it('a worker claims only the versions it runs, and lists them in the worker list while it runs', async () => {
    const v1 = defineTask('versioned', { handler: () => 'v1' });
    const v2 = defineTask('versioned', { version: 2, handler: () => 'v2' });
    const both = defineTask('versioned', { version: 2, accepts: [1], handler: () => 'v2 or v1' });
    const old = await enqueue(t.pool, v1, {});
    const fresh = await enqueue(t.pool, v2, {});
    expect((await getTask(t.pool, fresh))!.version).toBe(2);

    const onlyNew = track(createWorker({ pool: t.pool, tasks: [v2], pollInterval: 50 }));
    // idle once the version-2 run is done: its claims found nothing more it may take
    const idle = nextEvent(onlyNew, 'worker:idle');
    await onlyNew.start();
    expect(await waitForResult(t.pool, fresh, { timeout: '20s' })).toBe('v2');
    const listed = async () => (await t.pool.query<{ owner: string; accepts: unknown }>('SELECT owner, accepts FROM leasehold.task_worker')).rows;
    await expect.poll(listed, { timeout: 10_000 }).toEqual([{ owner: onlyNew.owner, accepts: { versioned: [2] } }]);
    // the version-1 run waits for a worker that runs version 1
    await idle;
    expect((await readTask(t.db, old.id)).status).toBe('pending');
    await onlyNew.stop();
    await expect.poll(listed, { timeout: 10_000 }).toEqual([]);

    const upgraded = track(createWorker({ pool: t.pool, tasks: [both], pollInterval: 50 }));
    await upgraded.start();
    expect(await waitForResult(t.pool, old, { timeout: '20s' })).toBe('v2 or v1');
    await upgraded.stop();
  });
});
