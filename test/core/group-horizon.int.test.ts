// A long transaction elsewhere holds the MVCC horizon while one ordering group's backlog drains:
// every row unblocked (or handed to its finisher) leaves its old version's entry in the group's
// index of blocked rows, and vacuum may not remove it. Each finisher looks for its group's next row
// past the head it finished, so what it reads stays flat; from the group's start it read every
// entry left behind, and one long group's drain was quadratic. The group's row gets a version per
// finished head, so it is looked up by its key once per head (its lock), not three times.
// A busy group that empties after each row (its rows run as they come) is made anew for each:
// its producer looks for the new row from the lowest id it inserted, and its finisher, finding
// nothing past the head, looks below it only from the group's first head, not from its start;
// and the worker's claims, which that write made nothing claimable for, keep their floor.
import { createWorker, defineTask, enqueue, enqueueMany, waitForResult } from '@leasehold/core';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { holdHorizon, indexReads, useSessions } from '../horizon.js';

const t = useTestDatabase();
const { newPool, endPool, endAfter } = useSessions(t.url);
const track = useWorkers();
const N = 2_000;
/** Tasks of the group that empties after each. */
const ONE_AT_A_TIME = 1_000;

describe('one long ordering group with the horizon held', () => {
  it('runs in order, and each finisher reads its next row, not the entries of the rows before it', { timeout: 180_000 }, async () => {
    const handled: number[] = [];
    const job = defineTask<{ n: number }>('group-horizon', { ordered: true, handler: ({ n }) => void handled.push(n) });
    await enqueueMany(t.pool, job, Array.from({ length: N }, (_, n) => ({ payload: { n }, groupKey: 'account-7' })));
    endAfter(await holdHorizon(t.url, 'group-horizon'));
    // the enqueue's session counts are in once it reports them
    await expect.poll(async () => (await indexReads(t.db, 'task_blocked')).scans, { timeout: 15_000 }).toBeGreaterThan(0);
    const before = await indexReads(t.db, 'task_blocked');
    const groupBefore = await indexReads(t.db, 'task_group_pkey');

    const pool = newPool();
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 8 }));
    await worker.start();
    await expect
      .poll(async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE status = 'done'`.execute(t.db)).rows[0]!.n, { timeout: 150_000 })
      .toBe(N);
    await worker.stop();
    // the worker's sessions have ended, so their counts are in
    await endPool(pool);
    expect(handled).toEqual(Array.from({ length: N }, (_, n) => n));

    const { perScan, scans } = await readsSince('task_blocked', before, N - 1);
    // a finisher's look reads the next row's entry (and the group's last, from its start, the
    // entries of all 2,000: once); from the group's start every look read the entries of the rows
    // before it, some 1,000 a look on average
    expect(perScan, `task_blocked entries read per scan (${scans} scans)`).toBeLessThan(20);
    // the group's row is written at every finished head, so with the horizon held a look by its
    // key walks every version written since: the finisher looks it up once, to lock it, and the
    // settle writes it where the lock found it (three looks a head when the settle read and wrote
    // it by key)
    const groupAfter = await indexReads(t.db, 'task_group_pkey');
    expect(groupAfter.scans - groupBefore.scans, 'lookups of the group row by its key').toBeLessThan(1.5 * N);
  });

  it('a group that empties after each task: its producer, finisher and claims read the entries of its current rows only', { timeout: 180_000 }, async () => {
    const handled: number[] = [];
    const job = defineTask<{ n: number }>('group-horizon-one', { ordered: true, handler: ({ n }) => void handled.push(n) });
    endAfter(await holdHorizon(t.url, 'group-horizon-one'));
    // two connections: the suite runs files in parallel under the server's max_connections
    const workerPool = newPool(2);
    const worker = track(createWorker({ pool: workerPool, tasks: [job], concurrency: 2 }));
    await worker.start();
    const before = await indexReads(t.db, 'task_blocked');
    const claimBefore = await indexReads(t.db, 'task_claim');
    // one task at a time, each enqueued once the one before is done, so each finds its group gone
    const producerPool = newPool(1);
    for (let n = 0; n < ONE_AT_A_TIME; n++) {
      const ref = await enqueue(producerPool, job, { n }, { groupKey: 'account-8' });
      await waitForResult(producerPool, ref, { timeout: '30s' });
    }
    await worker.stop();
    // the sessions have ended, so their counts are in
    await endPool(workerPool);
    await endPool(producerPool);
    expect(handled).toEqual(Array.from({ length: ONE_AT_A_TIME }, (_, n) => n));
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_group`.execute(t.db);
    expect(rows[0]!.n, 'group rows left').toBe(0);

    // each task: its producer's look, and its finisher's past the head and below it
    const { perScan, scans } = await readsSince('task_blocked', before, 3 * ONE_AT_A_TIME);
    // from the group's start, the producer's and the finisher's looks read the entry of every task
    // of the group before, some 250 a look on average
    expect(perScan, `task_blocked entries read per scan (${scans} scans)`).toBeLessThan(5);
    // each task enters the claim index as its group's head, and its entry stays there: the
    // worker's claims start at their floor (the rows of the last second: some 15 entries a scan
    // at 40 tasks/s), which its writes, leaving the group empty, do not move back. When every
    // claim after a grouped write, or during one, read the index from its start: 167 a scan
    const claims = await readsSince('task_claim', claimBefore, ONE_AT_A_TIME);
    expect(claims.perScan, `task_claim entries read per scan (${claims.scans} scans)`).toBeLessThan(50);
  });
});

/** An index's entries read per scan since `before`, once the sessions' counts show at least `scans` scans. */
async function readsSince(index: string, before: { scans: number; entries: number }, scans: number): Promise<{ perScan: number; scans: number }> {
  let after = before;
  await expect
    .poll(async () => {
      after = await indexReads(t.db, index);
      return after.scans - before.scans;
    }, { timeout: 15_000 })
    .toBeGreaterThanOrEqual(scans);
  return { perScan: (after.entries - before.entries) / (after.scans - before.scans), scans: after.scans - before.scans };
}
