// A long transaction elsewhere in the database (an analytics session, a forgotten BEGIN) holds the
// MVCC horizon: vacuum cannot remove what claims leave behind, and every claimed row keeps a dead
// entry in the claim index. The worker's claims start past those entries (its ready floor, one per
// priority its claims take), so what a claim reads stays flat however many rows went through, at
// the default priority or another; and the floor never passes a row that can still be taken: a
// task whose enqueue commits long after it took its id still starts.
import { createWorker, defineTask, enqueue, enqueueMany, taskTable } from '@leasehold/core';
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

/** Runs tasks through a fresh worker on a pool of its own, one at a time for `ms`, and ends the pool. */
async function runOneByOne(ms: number, name: string, priority: number): Promise<void> {
  const pool = newPool();
  const started: string[] = [];
  const job = defineTask<{ i: number }>(name, { handler: () => {} });
  const worker = track(createWorker({ pool, tasks: [job], concurrency: 1 }));
  worker.on('task:succeeded', ({ task }) => started.push(task.id));
  await worker.start();
  const until = performance.now() + ms;
  for (let i = 0; performance.now() < until || i < 50; i++) {
    const { id } = await enqueue(t.pool, job, { i }, { priority });
    await expect.poll(() => started.includes(id), { timeout: 30_000, interval: 5 }).toBe(true);
  }
  await worker.stop();
  await endPool(pool);
}

// (priority 5: every task of the workload at a priority other than the default, whose range of the
// claim index was read from its start by every claim before the floors were kept per priority)
describe.each([0, 5])('ready floor, tasks of priority %i', (priority) => {
  it('with the horizon held, claims read past the entries of the rows claimed before, not all of them', { timeout: 180_000 }, async () => {
    // (the variants share the file's database: each starts from an empty table)
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    endAfter(await holdHorizon(t.url, 'ready-floor-horizon'));
    const job = defineTask<{ i: number }>(`floor.bulk.${priority}`, { handler: () => {} });
    // 3,000 rows claimed and done while the horizon is held: 3,000 dead entries in task_claim
    await enqueueMany(
      t.pool,
      job,
      Array.from({ length: 3_000 }, (_, i) => ({ payload: { i }, priority })),
    );
    const pool = newPool();
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 8 }));
    await worker.start();
    await expect
      .poll(async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE status = 'done'`.execute(t.db)).rows[0]!.n, { timeout: 120_000 })
      .toBe(3_000);
    await worker.stop();
    await endPool(pool);
    const dead = (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task`.execute(t.db)).rows[0]!.n;
    expect(dead).toBe(3_000);

    // then tasks one at a time for 5 s through a new worker: for its first second (the floor's
    // window: an INSERT from before its first claim may still commit) its claims walk the
    // entries, and then they start where the pending rows start
    await expect.poll(async () => (await indexReads(t.db, 'task_claim')).scans, { timeout: 15_000 }).toBeGreaterThan(0);
    const before = await indexReads(t.db, 'task_claim');
    await runOneByOne(5_000, job.name, priority);
    // the worker's sessions have ended, so their counts are in
    let after = before;
    await expect
      .poll(async () => {
        after = await indexReads(t.db, 'task_claim');
        return after.scans - before.scans;
      }, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(50);
    const perScan = (after.entries - before.entries) / (after.scans - before.scans);
    // a claim scans the index in up to three ranges (the priorities above this one, this one from
    // its floor, those below); from the beginning its scan of this priority reads some 3,000
    // entries, about 1,000 a scan (1,038 without the floor); with it, only the first second's do
    expect(perScan, `index entries read per scan (${after.scans - before.scans} scans)`).toBeLessThan(450);
  });

  it('a task whose enqueue commits well after it took its id, while claims went past it, still starts', { timeout: 120_000 }, async () => {
    const job = defineTask<{ k: string }>(`floor.late.${priority}`, { handler: () => {} });
    const started = new Set<string>();
    const pool = newPool();
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 2, pollInterval: '500ms' }));
    worker.on('task:succeeded', ({ task }) => started.add((task.payload as { k: string }).k));
    await worker.start();

    // a producer's transaction takes its task's id, then stays open
    const producer = endAfter(new pg.Client({ connectionString: t.url }));
    await producer.connect();
    await producer.query('BEGIN');
    await enqueue(producer, job, { k: 'late' }, { priority });
    // meanwhile tasks with later ids come and go, for longer than the floor's window (1 s): the
    // worker's claims see only rows past the open one, and its floor moves past it
    const until = performance.now() + 2_500;
    for (let i = 0; performance.now() < until; i++) {
      await enqueue(t.pool, job, { k: `next-${i}` }, { priority });
      await expect.poll(() => started.has(`next-${i}`), { timeout: 30_000, interval: 5 }).toBe(true);
    }
    await producer.query('COMMIT');
    // found by the floor's probe (once per poll interval) rather than never
    await expect.poll(() => started.has('late'), { timeout: 30_000, interval: 20 }).toBe(true);
    await worker.stop();
  });
});

describe('the claim index read in ranges, one per priority with a floor', () => {
  it('takes rows by priority, then id, leaving out only the rows below each given floor', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const job = defineTask<{ i: number }>('floor.ranges', { handler: () => {} });
    const priorities = [7, 3, 0, -2, 3, 7, 0, -2, 5];
    await enqueueMany(t.pool, job, Array.from({ length: 90 }, (_, i) => ({ payload: { i }, priority: priorities[i % priorities.length]! })));
    const { rows } = await sql<{ id: string; priority: number }>`SELECT id, priority FROM leasehold.task ORDER BY priority DESC, id`.execute(t.db);
    const ids = (p: number) => rows.filter((r) => r.priority === p).map((r) => String(r.id));
    // floors for 3 and 0 (the sixth row of each on), none for 7, 5 and -2 (read from their start)
    const floors = new Map([[3, ids(3)[5]!], [0, ids(0)[5]!]]);
    const taken: string[] = [];
    for (;;) {
      const r = await leaseClaim(t.pool, taskTable(), { owner: 'ranges', batch: 7, leaseMs: 60_000, readyFloors: floors });
      if (r.claimed.length === 0) break;
      taken.push(...r.claimed.map((c) => c.id));
    }
    const expected = rows
      .filter((r) => !floors.has(r.priority) || BigInt(r.id) >= BigInt(floors.get(r.priority)!))
      .map((r) => String(r.id));
    expect(new Set(taken)).toEqual(new Set(expected));
    // in claim order: each claim's rows come after the previous claim's
    const order = new Map(rows.map((r, i) => [String(r.id), i]));
    const positions = taken.map((id) => order.get(id)!);
    for (let i = 7; i < positions.length; i += 7) expect(Math.min(...positions.slice(i, i + 7))).toBeGreaterThan(Math.max(...positions.slice(0, i)));
    // with no floors, the rows left out are taken, in claim order
    const rest = await leaseClaim(t.pool, taskTable(), { owner: 'ranges', batch: 100, leaseMs: 60_000 });
    expect(rest.claimed.map((c) => c.id).sort()).toEqual(rows.map((r) => String(r.id)).filter((id) => !taken.includes(id)).sort());
    expect(rest.readyFirst).toEqual(new Map([[3, ids(3)[0]], [0, ids(0)[0]]]));
  });
});
