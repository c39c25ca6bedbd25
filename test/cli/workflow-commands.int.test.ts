// `leasehold task show` and `leasehold cancel` (issue 13) against workflows a real worker parked.
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, getTask, waitForResult, type TaskContext } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { cliEnv, runCli } from './run-cli.js';

const t = useTestDatabase();
const track = useWorkers();
let env: NodeJS.ProcessEnv;

// no worker runs this one, so the parent's children stay pending and the parent waiting
const shipParcel = defineTask('ship-parcel', { handler: (p: { parcel: number }) => p.parcel });
const orderFlow = defineTask('order-flow', {
  handler: async (p: { order: number }, ctx: TaskContext) => {
    await ctx.step('reserve', () => ({ sku: 'A-1', qty: 2 }));
    const parcels = await ctx.spawn('ship', shipParcel, [{ payload: { parcel: 1 } }, { payload: { parcel: 2 } }]);
    await ctx.waitForChildren(parcels);
    return { order: p.order, shipped: true };
  },
});
const napper = defineTask('napper', {
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('prepare', () => 'x'.repeat(500));
    await ctx.sleep('cool-off', '1h');
  },
});
const quick = defineTask('quick', { handler: (p: { n: number }) => ({ total: p.n * 2 }) });

let flowId: string;
let napId: string;
let quickId: string;

// a real worker runs them until the workflows park: the rows are what core wrote, not a fixture's guess
beforeAll(async () => {
  env = cliEnv({ DATABASE_URL: t.url });
  flowId = (await enqueue(t.pool, orderFlow, { order: 7 })).id;
  napId = (await enqueue(t.pool, napper, {})).id;
  const done = await enqueue(t.pool, quick, { n: 21 });
  quickId = done.id;
  const worker = track(createWorker({ pool: t.pool, tasks: [orderFlow, napper, quick], pollInterval: 20 }));
  const parked = Promise.all([flowId, napId].map((id) => nextEvent(worker, 'task:suspended', ({ task }) => task.id === id)));
  await worker.start();
  try {
    await parked;
    expect(await waitForResult(t.pool, done, { timeout: '15s' })).toEqual({ total: 42 });
  } finally {
    await worker.stop();
  }
});

describe('leasehold task show / cancel', () => {
  it('task show prints the task, its recorded steps and its children; --json prints getTask', async () => {
    const shown = await runCli(['task', 'show', flowId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const kids = (await getTask(t.pool, flowId))!.children.map((c) => c.id);
    expect(kids).toHaveLength(2);
    const out = shown.stdout;
    expect(out.split('\n')[0]).toBe(`task:${flowId}  order-flow`);
    expect(out).toMatch(/^status\s+waiting \(children\)$/m);
    expect(out).toMatch(/^attempts\s+0\/\d+$/m); // a park gives its attempt back
    expect(out).toMatch(/^parent\s+—$/m);
    expect(out).toMatch(/^created\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/m);
    expect(out).toMatch(/^payload\s+\{"order":7\}$/m);
    expect(out).toMatch(/^result\s+—$/m);
    expect(out).toMatch(/^STEP\s+STATE\s+RECORDED AT \(UTC\)\s+RESULT$/m);
    // jsonb's key order, as stored
    expect(out).toMatch(/^reserve\s+done\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\{"qty":2,"sku":"A-1"\}$/m);
    expect(out).toContain(`${JSON.stringify(kids)}`);
    expect(out).toMatch(/^CHILD\s+NAME\s+STATUS$/m);
    for (const kid of kids) expect(out).toMatch(new RegExp(`^task:${kid}\\s+ship-parcel\\s+pending$`, 'm'));

    // a child names its parent; "task:" ids are accepted as printed
    const child = await runCli(['task', 'show', `task:${kids[0]}`], env);
    expect(child.code, child.stderr).toBe(0);
    expect(child.stdout).toMatch(new RegExp(`^parent\\s+task:${flowId}$`, 'm'));
    expect(child.stdout).toContain('no recorded steps');
    expect(child.stdout).toContain('no children');

    const json = await runCli(['task', 'show', flowId, '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(JSON.stringify(await getTask(t.pool, flowId))));
  });

  it('task show gives a sleeping step its wake time and cuts a long step result to the width', async () => {
    const shown = await runCli(['task', 'show', napId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const wake = (await getTask(t.pool, napId))!.steps.find((s) => s.name === 'cool-off')!.wakeAt!;
    const at = wake.toISOString().slice(0, 19).replace('T', ' ');
    expect(shown.stdout).toMatch(new RegExp(`^status\\s+waiting \\(sleep, until ${at} UTC\\)$`, 'm'));
    expect(shown.stdout).toMatch(new RegExp(`^cool-off\\s+waiting until ${at}\\s+\\S+ \\S+\\s+—$`, 'm'));
    const prepare = shown.stdout.split('\n').find((l) => l.startsWith('prepare '))!;
    expect(prepare).toMatch(/^prepare\s+done\s+.*"x+…$/);
    expect(prepare.length).toBeLessThanOrEqual(120); // a pipe counts as 120 columns

    const done = await runCli(['task', 'show', quickId], env);
    expect(done.stdout).toMatch(/^status\s+done$/m);
    expect(done.stdout).toMatch(/^ended\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/m);
    expect(done.stdout).toMatch(/^result\s+\{"total":42\}$/m);
  });

  it('cancel cancels a waiting workflow and its unfinished children; an ended task stays as it is', async () => {
    const kids = (await getTask(t.pool, flowId))!.children.map((c) => c.id);
    const cancelled = await runCli(['cancel', flowId, '--reason', 'customer cancelled'], env);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout.trim()).toBe(`cancelled task:${flowId} and 2 unfinished descendant(s): ${kids.map((k) => `task:${k}`).join(', ')}`);
    const { rows } = await sql<{ id: string; status: string; resolution: string; done: boolean }>`
      SELECT id::text, status, resolution, done_at IS NOT NULL AS done FROM leasehold.task
      WHERE id = ANY(${[flowId, ...kids]}::bigint[]) ORDER BY id`.execute(t.db);
    expect(rows).toEqual([flowId, ...kids].map((id) => ({ id, status: 'cancelled', resolution: 'cancelled: customer cancelled', done: true })));

    const again = await runCli(['cancel', `task:${flowId}`], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(`task:${flowId} had already ended (cancelled); nothing was cancelled`);

    const ended = await runCli(['cancel', quickId, '--json'], env);
    expect(ended.code, ended.stderr).toBe(0);
    expect(JSON.parse(ended.stdout)).toEqual({ id: quickId, status: 'done', cancelled: [] });
    expect((await getTask(t.pool, quickId))!.status).toBe('done');

    const nap = await runCli(['cancel', napId, '--json'], env);
    expect(JSON.parse(nap.stdout)).toEqual({ id: napId, status: 'cancelled', cancelled: [napId] });
    const shown = await runCli(['task', 'show', napId], env);
    expect(shown.stdout).toMatch(/^status\s+cancelled$/m);
    expect(shown.stdout).toMatch(/^resolution\s+cancelled: \S+ with the leasehold CLI$/m); // who ran it
  });

  it('a missing task is an error with exit code 1; a malformed id exit code 2', async () => {
    const missing = await runCli(['cancel', '999999999'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no task 999999999 in schema "leasehold"; nothing was cancelled');
    expect(missing.stdout).toBe('');
    const notShown = await runCli(['task', 'show', 'task:999999999'], env);
    expect(notShown.code).toBe(1);
    expect(notShown.stderr).toContain('no task 999999999 in schema "leasehold"');

    const malformed = await runCli(['cancel', 'outbox:3'], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('"outbox:3" is not a task id');
    const none = await runCli(['task', 'show'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('task show needs one task id');
    const bare = await runCli(['task'], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('"leasehold task" needs one of: show');
  });
});
