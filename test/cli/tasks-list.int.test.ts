// `leasehold tasks list` and `leasehold task show`'s timeline (issue 33): against rows core wrote.
import { beforeAll, describe, expect, it } from 'vitest';
import { createWorker, defineSignal, defineTask, enqueue, listTasks, sendSignal, waitForResult, type TaskContext } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { cliEnv, runCli } from './run-cli.js';

const t = useTestDatabase();
const track = useWorkers();
let env: NodeJS.ProcessEnv;

const ready = defineSignal<{ ok: boolean }>('ready');
const leaf = defineTask('list-leaf', { handler: (p: { n: number }) => p.n });
const flow = defineTask('list-flow', {
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('load', () => 'loaded');
    await ctx.sleep('pause', '100ms');
    await ctx.waitForSignal(ready, { timeout: '1h' });
    const kids = await ctx.spawn('kids', leaf, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    return ctx.waitForChildren(kids);
  },
});
const idle = defineTask('list-idle', { handler: () => undefined });
let flowId: string;
let idleIds: string[];

beforeAll(async () => {
  env = cliEnv({ DATABASE_URL: t.url });
  idleIds = [];
  for (let i = 0; i < 5; i++) idleIds.push((await enqueue(t.pool, idle, {})).id); // no worker runs these: pending
  const handle = await enqueue(t.pool, flow, {});
  flowId = handle.id;
  const worker = track(createWorker({ pool: t.pool, tasks: [flow, leaf], pollInterval: 20 }));
  try {
    const slept = nextEvent(worker, 'task:suspended', ({ task }) => task.id === flowId);
    await worker.start();
    await slept;
    await nextEvent(worker, 'task:suspended', ({ task }) => task.id === flowId); // the signal wait
    await sendSignal(t.pool, handle, ready, { ok: true });
    await sendSignal(t.pool, handle, defineSignal('later'), {}); // never waited for
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual([1, 2]);
  } finally {
    await worker.stop();
  }
});

describe('leasehold tasks list', () => {
  it('lists tasks newest first with the filters, and pages with --after', async () => {
    const all = await runCli(['tasks', 'list'], env);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+ATTEMPTS\s+PARENT\s+CREATED \(UTC\)\s+ENDED \(UTC\)$/m);
    const ids = [...all.stdout.matchAll(/^task:(\d+) /gm)].map((m) => m[1]);
    expect(ids).toEqual((await listTasks(t.pool, {})).tasks.map((task) => task.id));
    expect(ids).toHaveLength(8);

    const pending = await runCli(['tasks', '--status', 'pending', '--name', 'list-idle,list-flow', '--json'], env);
    expect(pending.code, pending.stderr).toBe(0);
    const page = JSON.parse(pending.stdout) as { tasks: { id: string; status: string; createdAt: string }[]; next: string | null };
    expect(page.tasks.map((task) => task.id)).toEqual([...idleIds].reverse());
    expect(page.next).toBeNull();

    const children = await runCli(['tasks', 'list', '--parent', `task:${flowId}`, '--status', 'done'], env);
    expect(children.stdout.match(/^task:\d+\s+list-leaf\s+done\s+1\/\d+\s+task:\d+/gm)).toHaveLength(2);

    const first = await runCli(['tasks', 'list', '--name', 'list-idle', '--limit', '2'], env);
    const cursor = /--after (\S+)$/m.exec(first.stdout)?.[1];
    expect(cursor).toBeDefined();
    const second = await runCli(['tasks', 'list', '--name', 'list-idle', '--limit', '2', '--after', cursor!, '--json'], env);
    expect((JSON.parse(second.stdout) as { tasks: { id: string }[] }).tasks.map((task) => task.id)).toEqual([idleIds[2], idleIds[1]]);

    const recent = await runCli(['tasks', 'list', '--created-after', '1h', '--created-before', new Date(Date.now() + 60_000).toISOString(), '--json'], env);
    expect((JSON.parse(recent.stdout) as { tasks: unknown[] }).tasks).toHaveLength(8);
    const none = await runCli(['tasks', 'list', '--created-before', '2000-01-01'], env);
    expect(none.stdout).toContain('no tasks match');
  });

  it('refuses a wrong command line with exit 2', async () => {
    for (const [args, message] of [
      [['tasks', 'list', '--status', 'finished'], '--status must be among'],
      [['tasks', 'list', '--limit', '1001'], '--limit must be a whole number from 1 to 1000'],
      [['tasks', 'list', '--parent', 'x'], '--parent must be a task id'],
      [['tasks', 'list', '--created-after', '7'], '--created-after needs a unit'],
      [['tasks', 'list', '--created-after', '2026-13-45'], '--created-after must be an ISO 8601 time'],
      [['tasks', 'list', '--after', 'garbage'], '--after:'],
      [['tasks', 'list', '--reason', 'x'], 'option --reason does not apply'],
      [['tasks', 'purge'], '"leasehold tasks" needs one of: list'],
    ] as const) {
      const result = await runCli(args, env);
      expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
    }
  });
});

describe('leasehold task show: the timeline', () => {
  it('prints steps, the sleep, signals taken and pending, and children by time', async () => {
    const shown = await runCli(['task', 'show', flowId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const timeline = shown.stdout.slice(shown.stdout.indexOf('TIME (UTC)'));
    expect(timeline).toMatch(/^TIME \(UTC\)\s+EVENT\s+NAME\s+DETAIL$/m);
    const events = [...timeline.matchAll(/^\d{4}-\S+ \S+\s+(\S+)\s+(\S+)\s+(.*)$/gm)].map((m) => [m[1], m[2]]);
    expect(events).toEqual([
      ['step', 'load'],
      ['sleep', 'pause'],
      ['signal', 'signal:ready'],
      ['signal', 'ready'],
      ['signal', 'later'],
      ['spawn', 'kids'],
      ['child', expect.stringMatching(/^task:\d+$/)],
      ['child', expect.stringMatching(/^task:\d+$/)],
    ]);
    expect(timeline).toMatch(/sleep\s+pause\s+#1, claim \d+, until \S+ \S+, took [\d.]+ (ms|s)/);
    expect(timeline).toMatch(/signal\s+ready\s+sent, taken /);
    expect(timeline).toMatch(/signal\s+later\s+sent, pending/);
    expect(timeline).toMatch(/child\s+task:\d+\s+list-leaf, done /);
  });
});
