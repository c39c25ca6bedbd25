// Issue 33 item 4: ctx.step(name, fn, { retry }) calls fn again within the run, with its own
// bounded backoff, before the task's own retry policy takes over; a step that succeeds on a
// retry is recorded once; PermanentError and the errors that stop the run are not retried; an
// abort (here a cancel) ends the wait between calls at once.
import { describe, expect, it } from 'vitest';
import { cancelTask, ConfigError, createWorker, defineTask, enqueue, getTask, PermanentError, RetryableError, waitForResult, type TaskContext } from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const quick = { base: '1ms', cap: '2ms' } as const;

describe('a step that retries its function', () => {
  it('succeeds on its third call within one attempt of the task; recorded once, and not called again on a later run', async () => {
    const calls: string[] = [];
    let runs = 0;
    const flow = defineTask('step-retry-ok', {
      maxAttempts: 3,
      backoff: { base: '1ms', cap: '2ms' },
      handler: async (_p: object, ctx: TaskContext) => {
        runs++;
        const quote = await ctx.step(
          'quote',
          () => {
            calls.push('quote');
            if (calls.length < 3) throw new Error(`carrier timed out (call ${calls.length})`);
            return { price: 42 };
          },
          { retry: { maxAttempts: 3, backoff: quick } },
        );
        // a crash after the step: the next run finds it recorded
        if (runs === 1) throw new Error('crash after the step');
        return quote;
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ price: 42 });
    await worker.stop();
    expect(calls).toEqual(['quote', 'quote', 'quote']);
    expect(runs).toBe(2);
    const info = await getTask(t.pool, handle);
    expect(info?.steps.map((s) => [s.name, s.done, s.result])).toEqual([['quote', true, { price: 42 }]]);
    // one attempt spent by the crash, one by the run that finished: none by the step's failures
    expect(await readTask(t.db, handle.id)).toMatchObject({ status: 'done', attempts: 2 });
  });

  it("runs out of calls: the last error fails the attempt, the task's policy retries it, each run calls the step afresh, then the task is dead with that error", async () => {
    let calls = 0;
    let before = 0;
    const flow = defineTask('step-retry-exhausted', {
      maxAttempts: 2,
      backoff: { base: '1ms', cap: '2ms' },
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('before', () => void before++);
        await ctx.step(
          'charge',
          () => {
            calls++;
            throw new RetryableError(`gateway 503 (call ${calls})`);
          },
          { retry: { maxAttempts: 3, backoff: quick } },
        );
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    const dead = nextEvent(worker, 'task:dead', ({ task }) => task.id === handle.id);
    await worker.start();
    await dead;
    await worker.stop();
    expect(calls).toBe(6); // 3 calls in each of the task's 2 attempts
    expect(before).toBe(1); // the step before it ran once, and was replayed
    const row = await readTask(t.db, handle.id);
    expect(row).toMatchObject({ status: 'dead', attempts: 2 });
    expect(row.lastError).toContain('gateway 503 (call 6)');
  });

  it('a PermanentError is not retried: one call, and the task is dead', async () => {
    let calls = 0;
    const flow = defineTask('step-retry-permanent', {
      maxAttempts: 5,
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step(
          'validate',
          () => {
            calls++;
            throw new PermanentError('card declined');
          },
          { retry: { maxAttempts: 5, backoff: quick } },
        );
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    const dead = nextEvent(worker, 'task:dead', ({ task }) => task.id === handle.id);
    await worker.start();
    await dead;
    await worker.stop();
    expect(calls).toBe(1);
    expect(await readTask(t.db, handle.id)).toMatchObject({ status: 'dead', attempts: 1 });
  });

  it('a cancel during the wait between calls ends it at once: the function is not called again', async () => {
    let calls = 0;
    const failed = gate();
    const stopped = gate();
    let stoppedWith: unknown;
    const flow = defineTask('step-retry-cancel', {
      // the worker hears of a cancel at its next heartbeat, a third of the lease
      lease: '3s',
      handler: async (_p: object, ctx: TaskContext) => {
        try {
          await ctx.step(
            'slow-retry',
            () => {
              calls++;
              failed.open();
              throw new Error('flaky');
            },
            // the first wait is drawn from [0, 1 h): far longer than the test, unless the cancel ends it
            { retry: { maxAttempts: 2, backoff: { base: '1h', cap: '1h' } } },
          );
        } catch (error) {
          stoppedWith = error;
          stopped.open();
          throw error;
        }
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    await failed.wait;
    const ended = nextEvent(worker, 'task:cancelled', ({ task }) => task.id === handle.id);
    await cancelTask(t.pool, handle.id);
    await ended;
    // the step itself gave up its wait (the runner's abort alone would leave it pending for up to an hour)
    await Promise.race([stopped.wait, new Promise((_, reject) => setTimeout(() => reject(new Error('the step still waits after the cancel')), 15_000))]);
    expect(stoppedWith).toMatchObject({ code: 'CANCELLED' });
    await worker.stop();
    expect(calls).toBe(1);
    expect(await readTask(t.db, handle.id)).toMatchObject({ status: 'cancelled' });
  });

  it('bad retry options are a ConfigError at the call, before the function runs', async () => {
    const seen: unknown[] = [];
    let calls = 0;
    const fn = () => void calls++;
    const bad = [
      { retry: { maxAttempts: 0 } },
      { retry: { maxAttempts: 101 } },
      { retry: { backoff: { base: 'soon' } } },
      { retry: { backoff: { base: '2s', cap: '1s' } } },
      { retry: { attempts: 3 } },
      { retries: 3 },
      { retry: 3 },
    ];
    const flow = defineTask('step-retry-bad', {
      handler: async (_p: object, ctx: TaskContext) => {
        for (const [i, options] of bad.entries()) {
          seen.push(await ctx.step(`s${i}`, fn, options as never).catch((e: unknown) => e));
        }
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow], pollInterval: 20 }));
    await worker.start();
    await waitForResult(t.pool, handle, { timeout: '20s' });
    await worker.stop();
    expect(calls).toBe(0);
    expect(seen).toHaveLength(bad.length);
    for (const error of seen) expect(error).toBeInstanceOf(ConfigError);
    expect((seen[4] as Error).message).toMatch(/attempts/);
    expect((seen[5] as Error).message).toMatch(/retries/);
  });
});
