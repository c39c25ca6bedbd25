// Limits as a worker sees them (issue 14): bad bounds are ConfigErrors at definition; a worker
// records its limits at start and keeps its tasks within them; a rate's wait is a timer, not a
// poll; `leasehold stats` shows limits; and createWorker({ schedules }) fires its schedules.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createWorker,
  defineLimit,
  defineSchedule,
  defineTask,
  enqueueMany,
  limitList,
  scheduleList,
  type LimitOptions,
} from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { cliEnv, runCli } from '../cli/run-cli.js';

const t = useTestDatabase();
const track = useWorkers();

beforeEach(async () => {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, leasehold.task_limit, leasehold.schedule`.execute(t.db);
});

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('defineLimit', () => {
  it.each([
    [{ concurrency: 0 }, 'concurrency'],
    [{ concurrency: Number.NaN }, 'concurrency'],
    [{ concurrency: -1 }, 'concurrency'],
    [{ concurrency: 1.5 }, 'concurrency'],
    [{ concurrency: 10_001 }, 'concurrency'],
    [{ concurrencyPerKey: 0 }, 'concurrencyPerKey'],
    [{ rate: { limit: 0, period: '1s' } }, 'rate.limit'],
    [{ rate: { limit: Number.NaN, period: '1s' } }, 'rate.limit'],
    [{ rate: { limit: 2.5, period: '1s' } }, 'rate.limit'],
    [{ rate: { limit: 5, period: 0 } }, 'rate.period'],
    [{ rate: { limit: 5, period: '-1s' } }, 'rate.period'],
    [{ rate: { limit: 5, period: 'soon' } }, 'rate.period'],
    [{ rate: { limit: 5, period: 0.5 } }, 'rate.period'],
    [{ ratePerKey: { limit: -3, period: '1m' } }, 'ratePerKey.limit'],
    [{}, 'concurrency'],
  ] as [LimitOptions, string][])('refuses %j, naming %s', (options, option) => {
    const error = configError(() => defineLimit('api', options));
    expect(error.option).toBe(option);
    expect(error.message).toContain(option === 'concurrency' && Object.keys(options).length === 0 ? 'at least one' : `\`${option}\``);
  });

  it('refuses a bad name, a limit not made by defineLimit, and two limits of one name in a worker', () => {
    expect(configError(() => defineLimit('', { concurrency: 1 })).option).toBe('name');
    const fake = { name: 'api', concurrency: 1 } as unknown as ReturnType<typeof defineLimit>;
    expect(configError(() => defineTask('x', { limit: fake, handler: () => {} })).option).toBe('limit');
    const a = defineTask('a', { limit: defineLimit('api', { concurrency: 1 }), handler: () => {} });
    const b = defineTask('b', { limit: defineLimit('api', { concurrency: 2 }), handler: () => {} });
    expect(configError(() => createWorker({ pool: t.pool, tasks: [a, b] })).option).toBe('tasks');
  });
});

describe('a worker under limits', () => {
  it('records its limits at start (a changed bound applies from the next start) and runs within them', async () => {
    let running = 0;
    let most = 0;
    const handler = async () => {
      most = Math.max(most, ++running);
      await sleep(30);
      running--;
    };
    const api = defineLimit('api', { concurrency: 2 });
    const call = defineTask<{ n: number }>('call-api', { limit: api, handler });
    const push = defineTask<{ n: number }>('push-api', { limit: api, handler });
    await enqueueMany(t.pool, call, Array.from({ length: 20 }, (_, n) => ({ payload: { n } })));
    await enqueueMany(t.pool, push, Array.from({ length: 20 }, (_, n) => ({ payload: { n } })));
    const worker = track(createWorker({ pool: t.pool, tasks: [call, push], concurrency: 8, logger: null }));
    let done = 0;
    worker.on('task:succeeded', () => void done++);
    await worker.start();
    expect(await limitList(t.pool)).toMatchObject([
      { name: 'api', taskNames: ['call-api', 'push-api'], concurrency: 2, concurrencyPerKey: null, rate: null, seenBy: worker.owner },
    ]);
    await expect.poll(() => done, { timeout: 30_000 }).toBe(40);
    await worker.stop();
    expect(most).toBe(2);

    const wider = defineTask<{ n: number }>('call-api', { limit: defineLimit('api', { concurrency: 5, rate: { limit: 100, period: '1m' } }), handler });
    const next = track(createWorker({ pool: t.pool, tasks: [wider], logger: null }));
    await next.start();
    await next.stop();
    expect(await limitList(t.pool)).toMatchObject([{ name: 'api', taskNames: ['call-api'], concurrency: 5, rate: { limit: 100, periodMs: 60_000 } }]);
  });

  it('waits for a rate\'s window on a timer: a few claims per start, not a poll loop', async () => {
    // 2 per 1.5 s
    const paced = defineLimit('paced', { rate: { limit: 2, period: '1500ms' } });
    const starts: number[] = [];
    const task = defineTask<{ n: number }>('paced', { limit: paced, handler: () => void starts.push(Date.now()) });
    await enqueueMany(t.pool, task, Array.from({ length: 6 }, (_, n) => ({ payload: { n } })));
    let claims = 0;
    const counting = countingPool(t.pool, (text) => text.includes('flow_limits') && void claims++);
    const worker = track(createWorker({ pool: counting, tasks: [task], concurrency: 4, pollInterval: '60s', logger: null }));
    await worker.start();
    await expect.poll(() => starts.length, { timeout: 20_000 }).toBe(6);
    await worker.stop();
    // never more than 2 in 1.5 s
    for (let i = 2; i < starts.length; i++) expect(starts[i]! - starts[i - 2]!).toBeGreaterThanOrEqual(1_400);
    // a handful of claims per start (the one the timer wakes, the ones before sleeping again),
    // where polling for the 3 s would send hundreds
    expect(claims).toBeLessThanOrEqual(6 * 6);
  });

  it('leasehold stats lists limits with what runs and waits under them', async () => {
    const api = defineLimit('partner-api', { concurrency: 3, concurrencyPerKey: 1, rate: { limit: 50, period: '1s' } });
    const task = defineTask<{ n: number }>('sync-account', { limit: api, handler: () => new Promise(() => {}) });
    await enqueueMany(t.pool, task, Array.from({ length: 5 }, (_, n) => ({ payload: { n }, limitKey: `acct-${n % 2}` })));
    const worker = track(createWorker({ pool: t.pool, tasks: [task], concurrency: 4, logger: null }));
    await worker.start();
    await expect.poll(() => worker.runningCount, { timeout: 20_000 }).toBe(2);
    const env = cliEnv({ DATABASE_URL: t.url });
    const json = await runCli(['stats', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).limits).toMatchObject([
      { name: 'partner-api', concurrency: 3, concurrencyPerKey: 1, rate: { limit: 50, periodMs: 1_000 }, running: 2, runningKeys: 2, waiting: 3 },
    ]);
    const text = await runCli(['stats'], env);
    expect(text.stdout).toMatch(/^LIMIT\s+TASKS\s+CONCURRENCY\s+PER KEY\s+RATE\s+RATE PER KEY\s+RUNNING\s+STARTS IN WINDOW\s+PENDING\s+SEEN BY$/m);
    expect(text.stdout).toMatch(/^partner-api\s+sync-account\s+3\s+1\s+50\/1s\s+—\s+2\s+\d+\s+3\s+\S+$/m);
    await worker.stop({ timeout: 0 });
  });
});

describe('createWorker({ schedules })', () => {
  it('fires its schedules while it runs and stops them with it', async () => {
    const ran: string[] = [];
    const tick = defineTask<{ at: string }>('tick', { handler: ({ at }) => void ran.push(at) });
    const everySecond = defineSchedule('every-second', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const worker = track(createWorker({ pool: t.pool, tasks: [tick], schedules: [everySecond], logger: null }));
    await worker.start();
    await expect.poll(() => ran.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    expect((await scheduleList(t.pool, 'leasehold'))[0]).toMatchObject({ name: 'every-second', seenBy: worker.owner, alive: true });
    await worker.stop();
    expect((await scheduleList(t.pool, 'leasehold'))[0]).toMatchObject({ alive: false });
    expect(new Set(ran).size).toBe(ran.length);
  });

  it('checks its schedules when it is created', () => {
    const tick = defineTask<{ at: string }>('tick', { handler: () => {} });
    const s = defineSchedule('s', tick, { cron: '* * * * *', payload: { at: '' } });
    expect(configError(() => createWorker({ pool: t.pool, tasks: [tick], schedules: [s, s] })).option).toBe('schedules');
  });
});

/** `pool`, with `onQuery` called with the text of each statement sent through it. */
function countingPool(pool: pg.Pool, onQuery: (text: string) => void): pg.Pool {
  return new Proxy(pool, {
    get(target, key, receiver) {
      if (key === 'query') {
        return (arg: string | { text: string }, ...rest: unknown[]) => {
          onQuery(typeof arg === 'string' ? arg : arg.text);
          return (target.query as (...a: unknown[]) => unknown)(arg, ...rest);
        };
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
