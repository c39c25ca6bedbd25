// `leasehold task fork <id> --from <step>` (issue 33): core's forkTask from the command line.
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, getTask, waitForResult, type TaskContext } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { cliEnv, runCli } from './run-cli.js';

const t = useTestDatabase();
const track = useWorkers();

describe('leasehold task fork', () => {
  it('forks a run from a recorded step, and refuses what it cannot fork with exit 1 or 2', async () => {
    const runs: string[] = [];
    const flow = defineTask('cli-fork', {
      handler: async (_p: object, ctx: TaskContext) => {
        const a = await ctx.step('a', () => (runs.push('a'), 1));
        const b = await ctx.step('b', () => (runs.push('b'), 2));
        return a + b;
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    const original = await enqueue(t.pool, flow, {});
    expect(await waitForResult(t.pool, original, { timeout: '10s' })).toBe(3);
    const env = cliEnv({ DATABASE_URL: t.url });

    const forked = await runCli(['task', 'fork', `task:${original.id}`, '--from', 'b', '--json'], env);
    expect(forked.code).toBe(0);
    const report = JSON.parse(forked.stdout) as { id: string; forkedFrom: string; fromStep: string };
    expect(report).toMatchObject({ forkedFrom: original.id, fromStep: 'b' });
    expect(await waitForResult(t.pool, report.id, { timeout: '10s' })).toBe(3);
    expect(runs).toEqual(['a', 'b', 'b']);
    expect((await getTask(t.pool, report.id))?.forkedFrom).toBe(original.id);

    const text = await runCli(['task', 'fork', original.id, '--from', 'a'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^forked task:${original.id} from step "a" as task:\\d+ \\(pending\\)`));
    await worker.stop();

    const unknown = await runCli(['task', 'fork', original.id, '--from', 'zzz'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no recorded call "zzz"');
    expect(unknown.stderr).toContain('"a", "b"');
    const missing = await runCli(['task', 'fork', '999999999', '--from', 'a'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no task 999999999 in schema "leasehold"; nothing was forked');
    const noFrom = await runCli(['task', 'fork', original.id], env);
    expect(noFrom.code).toBe(2);
    expect(noFrom.stderr).toContain('task fork needs --from');
    const noId = await runCli(['task', 'fork', '--from', 'a'], env);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toContain('task fork needs one task id');
  });
});
