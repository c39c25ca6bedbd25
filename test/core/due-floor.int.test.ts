// Retries, deferrals, tasks enqueued with a start time and sleeping workflow runs reach a claim by
// their due time (`task_due`, `task_waiting`). A long transaction elsewhere keeps an index entry
// for each one taken since it began, and a claim that reads those indexes from their start visits
// them all: with the horizon held, what each claim read grew by the rate of retries or wakes every
// second. The worker's claims start at a floor by due time (its due floors), so what a claim reads
// stays flat; and the floor never passes a row that can still be taken: a scheduled task whose
// enqueue commits long after its due time still starts.
import { createWorker, defineTask, enqueue, enqueueMany, RetryableError, taskTable } from '@leasehold/core';
import { leaseClaim } from '@leasehold/core/internal';
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { holdHorizon, indexReads, useSessions } from '../horizon.js';

const t = useTestDatabase();
const { newPool, endPool, endAfter } = useSessions(t.url);
const track = useWorkers();

/** Rows of `name` by due time, as the claim's due indexes order them, with their positions. */
async function byDueTime(name: string): Promise<{ id: string; position: string }[]> {
  const { rows } = await sql<{ id: string; position: string }>`
    SELECT x.id::text AS id, (extract(epoch FROM x.available_at) * 1000000)::bigint || ':' || x.id AS position
    FROM leasehold.task AS x WHERE x.name = ${name} ORDER BY x.available_at, x.id`.execute(t.db);
  return rows;
}

const counted = async (where: string) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE ${sql.raw(where)}`.execute(t.db)).rows[0]!.n;

describe('the whole claim read from due floors', () => {
  it('takes scheduled rows due from the given position on, by due time then id, and says where they began', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const job = defineTask<{ i: number }>('due.sql', { handler: () => {} });
    await enqueueMany(t.pool, job, Array.from({ length: 12 }, (_, i) => ({ payload: { i }, runAt: new Date(Date.now() + 3_600_000) })));
    // due over the last seconds, three rows at each time: the floor's id orders rows of one time
    await sql`UPDATE leasehold.task AS x SET available_at = now() - (1 + o.n % 4) * interval '1 second'
              FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM leasehold.task) AS o WHERE o.id = x.id`.execute(t.db);
    const rows = await byDueTime('due.sql');
    const floor = rows[5]!.position;
    const first = await leaseClaim(t.pool, taskTable(), { owner: 'due', batch: 100, leaseMs: 60_000, dueFloors: new Map([['due', floor]]) });
    expect(first.claimed.map((c) => c.id).sort()).toEqual(rows.slice(5).map((r) => r.id).sort());
    expect(first.dueFirst).toEqual(new Map([['due', floor]]));
    // from the start: the rows left out
    const rest = await leaseClaim(t.pool, taskTable(), { owner: 'due', batch: 100, leaseMs: 60_000 });
    expect(rest.claimed.map((c) => c.id).sort()).toEqual(rows.slice(0, 5).map((r) => r.id).sort());
    expect(rest.dueFirst).toEqual(new Map([['due', rows[0]!.position]]));
  });

  it('takes parked runs due from the given position on; runs it wakes for others count among the scheduled rows it saw', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const mine = defineTask<{ i: number }>('due.parked', { handler: () => {} });
    const theirs = defineTask<{ i: number }>('due.theirs', { handler: () => {} });
    await enqueueMany(t.pool, mine, Array.from({ length: 6 }, (_, i) => ({ payload: { i } })));
    await enqueueMany(t.pool, theirs, Array.from({ length: 3 }, (_, i) => ({ payload: { i } })));
    // parked in a sleep that ended over the last seconds (as a park writes it)
    await sql`UPDATE leasehold.task AS x SET status = 'waiting', wait_for = 'sleep', scheduled = true, attempts = 1,
                available_at = now() - (10 - o.n) * interval '1 second'
              FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM leasehold.task) AS o WHERE o.id = x.id`.execute(t.db);
    const rows = await byDueTime('due.parked');
    const others = await byDueTime('due.theirs');
    const floor = rows[2]!.position;
    const claim = await leaseClaim(t.pool, taskTable(), {
      owner: 'due',
      batch: 100,
      leaseMs: 60_000,
      names: ['due.parked'],
      dueFloors: new Map([['parked', floor]]),
    });
    expect(claim.claimed.map((c) => c.id).sort()).toEqual(rows.slice(2).map((r) => r.id).sort());
    // the other worker's runs (due after these, past the floor) were woken: back to pending,
    // scheduled, with the times they came due, and this claim counts them as seen there
    expect(await counted(`name = 'due.theirs' AND status = 'pending' AND scheduled`)).toBe(3);
    expect(claim.dueFirst).toEqual(new Map([['parked', floor], ['due', others[0]!.position]]));
    // the runs below the floor are still parked, and a claim from the start takes them
    const rest = await leaseClaim(t.pool, taskTable(), { owner: 'due', batch: 100, leaseMs: 60_000, names: ['due.parked'] });
    expect(rest.claimed.map((c) => c.id).sort()).toEqual(rows.slice(0, 2).map((r) => r.id).sort());
  });
});

describe('due floors in a worker', () => {
  it('with the horizon held, claims read past the entries of the retries and wakes taken before, not all of them', { timeout: 180_000 }, async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    endAfter(await holdHorizon(t.url, 'due-floor-horizon'));
    const firstTry = new Set<number>();
    const retried = defineTask<{ i: number }>('due.retried', {
      backoff: { base: 1, cap: 1 },
      handler: ({ i }, ctx) => {
        if (ctx.task.attempts > 1) return;
        firstTry.add(i);
        throw new RetryableError('once', { retryAfterMs: 20 });
      },
    });
    const sleeper = defineTask<{ i: number }>('due.sleeper', {
      handler: async (_, ctx) => {
        await ctx.sleep('nap', 20);
      },
    });
    // 1,500 retries and 1,500 wakes while the horizon is held: as many dead entries in
    // task_due and task_waiting
    const bulk = newPool(6);
    const worker = track(createWorker({ pool: bulk, tasks: [retried, sleeper], concurrency: 16 }));
    await worker.start();
    await enqueueMany(t.pool, retried, Array.from({ length: 1_500 }, (_, i) => ({ payload: { i } })));
    await enqueueMany(t.pool, sleeper, Array.from({ length: 1_500 }, (_, i) => ({ payload: { i } })));
    await expect.poll(() => counted(`status = 'done'`), { timeout: 150_000, interval: 200 }).toBe(3_000);
    await worker.stop();
    await endPool(bulk);

    // then a trickle of both through a new worker, for longer than the floors' window (5 s):
    // for that window its claims read from each index's start, then from where the rows begin
    const pool = newPool();
    const trickle = track(createWorker({ pool, tasks: [retried, sleeper], concurrency: 4 }));
    const finished = new Set<string>();
    trickle.on('task:succeeded', ({ task }) => finished.add(task.id));
    await trickle.start();
    let i = 10_000;
    const runFor = async (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until) {
        const ids = await Promise.all([enqueue(t.pool, retried, { i: i++ }), enqueue(t.pool, sleeper, { i: i++ })]);
        await expect.poll(() => ids.every(({ id }) => finished.has(id)), { timeout: 30_000, interval: 5 }).toBe(true);
      }
    };
    await runFor(7_000);
    // the worker's sessions report what they read at least once a second while they work
    const due0 = await indexReads(t.db, 'task_due');
    const waiting0 = await indexReads(t.db, 'task_waiting');
    await runFor(6_000);
    await trickle.stop();
    await endPool(pool);
    let due1 = due0;
    let waiting1 = waiting0;
    await expect
      .poll(async () => {
        [due1, waiting1] = [await indexReads(t.db, 'task_due'), await indexReads(t.db, 'task_waiting')];
        return Math.min(due1.scans - due0.scans, waiting1.scans - waiting0.scans);
      }, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(20);
    // from the start each scan reads the 1,500 dead entries of the bulk and more (without the
    // floors: 1,606 in task_due and 1,139 in task_waiting per scan, the scans that look ahead from
    // now() included); from the floors, those of the last window's trickle and the probe's once
    // per poll interval (82 and 94)
    const perScan = (a: { scans: number; entries: number }, b: { scans: number; entries: number }) => (b.entries - a.entries) / (b.scans - a.scans);
    expect(perScan(due0, due1), `task_due entries per scan (${due1.scans - due0.scans} scans)`).toBeLessThan(500);
    expect(perScan(waiting0, waiting1), `task_waiting entries per scan (${waiting1.scans - waiting0.scans} scans)`).toBeLessThan(500);
  });

  it('a scheduled task whose enqueue commits long after its due time, while claims went past it, still starts', { timeout: 120_000 }, async () => {
    const job = defineTask<{ k: string }>('due.late', { handler: () => {} });
    // a task that runs until the end keeps the worker busy (never idle): only the probe that a busy
    // worker runs beside its claims can find the late task (an idle worker's poll reads from the start)
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = false;
    const hold = defineTask<{ k: string }>('due.hold', {
      handler: () => {
        holding = true;
        return held;
      },
    });
    const started = new Set<string>();
    const pool = newPool();
    const worker = track(createWorker({ pool, tasks: [job, hold], concurrency: 2, pollInterval: '500ms' }));
    worker.on('task:succeeded', ({ task }) => started.add((task.payload as { k: string }).k));
    await worker.start();
    await enqueue(t.pool, hold, { k: 'hold' });
    await expect.poll(() => holding, { timeout: 30_000 }).toBe(true);

    // a producer's transaction writes a task due in 50 ms, then stays open
    const producer = endAfter(new pg.Client({ connectionString: t.url }));
    await producer.connect();
    await producer.query('BEGIN');
    await enqueue(producer, job, { k: 'late' }, { runAt: new Date(Date.now() + 50) });
    // meanwhile scheduled tasks come due and go, for longer than the floors' window (5 s): the
    // worker's claims see only rows due after the open one, and its floor moves past it
    let i = 0;
    const next = async () => {
      const k = `next-${i++}`;
      await enqueue(t.pool, job, { k }, { runAt: new Date(Date.now() + 10) });
      await expect.poll(() => started.has(k), { timeout: 30_000, interval: 5 }).toBe(true);
    };
    const until = performance.now() + 6_500;
    while (performance.now() < until) await next();
    await producer.query('COMMIT');
    // found by the floors' probe (once per poll interval) while the worker stays busy
    while (!started.has('late')) {
      await next();
      expect(i, 'the late task had not started after 1,000 more').toBeLessThan(1_000);
    }
    release();
    await worker.stop();
  });
});
