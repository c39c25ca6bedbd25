// Issue 36, poolers: the core worker, enqueue and the scheduler through a private PgBouncer in
// transaction mode, with `noPreparedStatements`. Without a direct LISTEN connection the worker
// polls; the LISTEN cases are in listen.int.test.ts.
import { sql, Kysely, PostgresDialect } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createScheduler,
  createWorker,
  defineLimit,
  defineSchedule,
  defineTask,
  enqueue,
  enqueueMany,
  migrate,
  noPreparedStatements,
  RetryableError,
  withTransaction,
} from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { databaseOf, usePgBouncer } from './pgbouncer.js';
import { listeningSessions, usePools, waitUntil } from './pooled.js';

const t = useTestDatabase();
const bouncer = usePgBouncer();
const openPool = usePools(() => bouncer.url(databaseOf(t.url)));
const track = useWorkers();

/** Counts of tasks by status, for names starting with `prefix`. */
async function statuses(prefix: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: number }>`
    SELECT status, count(*)::int AS n FROM leasehold.task WHERE name LIKE ${`${prefix}%`} GROUP BY status`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

beforeAll(async () => {
  // the template's schema, read through the pooler: the route to the file's database works
  const probe = openPool({ max: 1 });
  const { rows } = await probe.query<{ db: string }>('SELECT current_database() AS db');
  expect(rows[0]!.db).toBe(databaseOf(t.url));
});

describe('through PgBouncer in transaction mode', () => {
  it('without the setting, named statements fail as the issue reports (26000 / 42P05); noPreparedStatements() on the client fixes it', async () => {
    const task = defineTask<{ n: number }>('pooler-harness', { handler: () => {} });
    const pool = openPool({ max: 2 });
    const [a, b] = [await pool.connect(), await pool.connect()];
    try {
      // a prepares leasehold_<hash> on the server connection PgBouncer lends it, which then goes
      // back to PgBouncer's pool; b's statement lands on a server connection that has it already
      // (or one that lacks it, after a Bind to a name only its own client connection prepared)
      await enqueue(a, task, { n: 1 });
      const failure = await enqueue(b, task, { n: 2 }).then(() => enqueue(a, task, { n: 3 })).then(() => undefined, (error: unknown) => error);
      expect((failure as { code?: string } | undefined)?.code, 'a named statement through the pooler').toMatch(/^(26000|42P05)$/);
      noPreparedStatements(a);
      noPreparedStatements(b);
      for (let i = 0; i < 10; i++) await enqueue(i % 2 === 0 ? a : b, task, { n: 10 + i });
    } finally {
      a.release(true);
      b.release(true);
    }
  });

  it('a worker given noPreparedStatements polls (no LISTEN), and runs what enqueue, enqueueMany, a transaction and Kysely add: each task once, a retried one too, 0 errors', async () => {
    const runs = new Map<number, number>();
    const flaky = new Set<number>([3, 77]);
    const work = defineTask<{ n: number }>('pooler-work', {
      handler: ({ n }) => {
        runs.set(n, (runs.get(n) ?? 0) + 1);
        // the first attempt fails: the retry goes through the pooler too
        if (flaky.delete(n)) throw new RetryableError(`flaky ${n}`, { retryAfterMs: 0 });
      },
    });
    const pool = openPool();
    const worker = track(createWorker({ pool, tasks: [work], noPreparedStatements: true, pollInterval: 50, concurrency: 4, logger: null }));
    const errors: Error[] = [];
    worker.on('worker:error', ({ error }) => errors.push(error));
    await worker.start();
    // the producer's own pool: marked by hand, as a process that runs no worker would
    const producer = noPreparedStatements(openPool({ max: 4 }));
    const kysely = new Kysely<object>({ dialect: new PostgresDialect({ pool: producer }) });
    for (let n = 0; n < 50; n++) await enqueue(producer, work, { n });
    await enqueueMany(producer, work, Array.from({ length: 100 }, (_, i) => ({ payload: { n: 50 + i } })));
    await withTransaction(producer, async (trx) => {
      for (let n = 150; n < 175; n++) await enqueue(trx, work, { n });
    });
    for (let n = 175; n < 200; n++) await enqueue(kysely, work, { n });
    await waitUntil(async () => (await statuses('pooler-work')).done === 200, '200 tasks done');
    await worker.stop({ timeout: '5s' });
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(await statuses('pooler-work')).toEqual({ done: 200 });
    expect([...runs.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect([...runs].filter(([, count]) => count !== 1)).toEqual([[3, 2], [77, 2]]);
    // nothing listened: behind a pooler without a direct connection the worker polls
    expect(await listeningSessions(t.pool, databaseOf(t.url))).toBe(0);
  });

  it('two workers under a concurrency limit kept in stripes run each task once and never more than the bound at once', async () => {
    // a limit of 64 is kept in stripes: its claims (the striped-only statement) are planned anew
    // on every call through the pooler, and must still count each stripe's running tasks right
    const limit = defineLimit('pooler-api', { concurrency: 64 });
    let running = 0;
    let most = 0;
    const runs = new Map<number, number>();
    const call = defineTask<{ n: number }>('pooler-limited', {
      limit,
      handler: async ({ n }) => {
        most = Math.max(most, ++running);
        runs.set(n, (runs.get(n) ?? 0) + 1);
        // long enough that the two workers' claims of the two stripes overlap, whatever the load
        await new Promise((r) => setTimeout(r, 20 + (n % 10)));
        running--;
      },
    });
    const errors: Error[] = [];
    const workers = [0, 1].map(() =>
      track(createWorker({ pool: openPool(), tasks: [call], noPreparedStatements: true, pollInterval: 50, concurrency: 48, logger: null })),
    );
    for (const w of workers) w.on('worker:error', ({ error }) => errors.push(error));
    await Promise.all(workers.map((w) => w.start()));
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_limit_stripe WHERE name = 'pooler-api'`.execute(t.db);
    expect(rows[0]!.n).toBe(2);
    await enqueueMany(noPreparedStatements(openPool({ max: 2 })), call, Array.from({ length: 600 }, (_, n) => ({ payload: { n } })));
    await waitUntil(async () => (await statuses('pooler-limited')).done === 600, '600 limited tasks done', 60_000);
    await Promise.all(workers.map((w) => w.stop()));
    expect(errors).toEqual([]);
    expect(runs.size).toBe(600);
    expect([...runs.values()].every((k) => k === 1)).toBe(true);
    expect(most).toBeLessThanOrEqual(64);
    // the two workers' 96 slots were more than the bound: it was reached
    expect(most).toBeGreaterThan(32);
  });

  it('a graceful stop through the pooler lets the running task finish and write its result', async () => {
    const running = gate();
    const release = gate();
    const slow = defineTask('pooler-slow', {
      handler: async () => {
        running.open();
        await release.wait;
        return 'finished';
      },
    });
    const pool = openPool();
    const worker = track(createWorker({ pool, tasks: [slow], noPreparedStatements: true, pollInterval: 50, logger: null }));
    const errors: Error[] = [];
    worker.on('worker:error', ({ error }) => errors.push(error));
    await worker.start();
    const ref = await enqueue(pool, slow, {});
    await running.wait;
    const done = nextEvent(worker, 'task:succeeded', ({ task }) => task.id === ref.id);
    const stopped = worker.stop({ timeout: '20s' });
    release.open();
    await done;
    await stopped;
    expect(errors).toEqual([]);
    const { rows } = await sql<{ status: string; result: unknown }>`SELECT status, result FROM leasehold.task WHERE id = ${ref.id}`.execute(t.db);
    expect(rows).toEqual([{ status: 'done', result: 'finished' }]);
  });

  it('a worker on an unmarked pool through the pooler logs its statement errors with the setting to change', async () => {
    // each task takes a moment, so that a finalize and the next claim overlap: the pooler then
    // serves them on two server connections, and a named statement meets one that lacks it
    const work = defineTask('pooler-unmarked', { handler: () => new Promise<void>((r) => setTimeout(r, 5)) });
    const lines: string[] = [];
    // console-like: the message comes first
    const logger = { warn: (message: unknown) => void lines.push(String(message)), error: (message: unknown) => void lines.push(String(message)) };
    const named = () => lines.some((l) => /26000|42P05|prepared statement/.test(l) && l.includes('noPreparedStatements: true'));
    // listen: false, so that start() does not wait on LISTEN; polls often, so named claims go
    // out on both of the pool's connections
    const worker = track(createWorker({ pool: openPool({ max: 2 }), tasks: [work], listen: false, pollInterval: 10, concurrency: 2, logger }));
    await worker.start();
    const producer = noPreparedStatements(openPool({ max: 1 }));
    // work keeps coming until the first such error is logged: which statement meets which
    // server connection is up to the pooler's timing, not the test's
    let giveUp = false;
    const producing = (async () => {
      while (!named() && !giveUp) {
        await enqueueMany(producer, work, Array.from({ length: 4 }, () => ({ payload: {} })));
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await waitUntil(named, 'a log line naming noPreparedStatements', 30_000).finally(() => {
      giveUp = true;
    });
    await producing;
    await worker.stop({ timeout: 0 });
  });

  it('migrate() through the pooler on a marked pool: its statements run twice on any server connection', async () => {
    const pool = noPreparedStatements(openPool({ max: 3 }));
    // the schema is the template's, current: each call reads every migration's row again
    expect((await migrate(pool)).applied).toEqual([]);
    expect((await migrate(pool)).applied).toEqual([]);
  });

  it('asking for LISTEN through the pooler is refused at createWorker, naming what to set', () => {
    const work = defineTask('pooler-refused', { handler: () => {} });
    const pool = openPool({ max: 1 });
    const create = () => createWorker({ pool, tasks: [work], noPreparedStatements: true, listen: true });
    expect(create).toThrow(ConfigError);
    expect(create).toThrow(/listenConnectionString/);
  });

  it('the scheduler fires its ticks through the pooler (createScheduler and createWorker({ schedules })), one task per tick', async () => {
    const tick = defineTask<{ at: string }>('pooler-tick', { handler: () => {} });
    const every = defineSchedule('pooler-every-second', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const pool = openPool({ max: 2 });
    const scheduler = createScheduler({ pool, schedules: [every], noPreparedStatements: true, logger: null });
    const errors: Error[] = [];
    scheduler.on('scheduler:error', ({ error }) => errors.push(error));
    await scheduler.start();
    try {
      await waitUntil(async () => ((await statuses('pooler-tick')).pending ?? 0) >= 2, 'two ticks enqueued', 10_000);
    } finally {
      await scheduler.stop();
    }
    // a worker that fires the same schedule and runs its tasks, all through the pooler
    const worker = track(createWorker({ pool: openPool(), tasks: [tick], schedules: [every], noPreparedStatements: true, pollInterval: 50, logger: null }));
    worker.on('worker:error', ({ error }) => errors.push(error));
    await worker.start();
    const before = (await statuses('pooler-tick')).done ?? 0;
    await waitUntil(async () => ((await statuses('pooler-tick')).done ?? 0) >= before + 3, 'three ticks run', 15_000);
    await worker.stop({ timeout: '5s' });
    expect(errors.map((e) => e.message)).toEqual([]);
    const { rows } = await sql<{ n: number; keys: number }>`
      SELECT count(*)::int AS n, count(DISTINCT dedup_key)::int AS keys FROM leasehold.task WHERE name = 'pooler-tick'`.execute(t.db);
    expect(rows[0]!.n).toBe(rows[0]!.keys);
  });
});
