// A crashed worker can hold far more leases than one claim of the worker that takes over: its
// buffer filled up to the largest claim. Those leases all run out together, and every one of them
// must start again within its lease plus the expired-lease cadence (docs/operations.md), not one
// claim's worth per poll interval of a worker that goes to sleep in between (a workflow harness
// run took 500 crashed runs back 16 at a time, 2 s apart), nor one claim's worth a minute once
// they ran out longer ago than a look's margin (the looks after a full one read only what ran out
// since it: every worker down for a minute, or a backlog that takes longer than the margin). A
// lease about to run out is looked ahead for, so that a sleeping worker wakes for it, also under a
// limit the worker serves, and also when the claim that was to look failed.
import { claim, createWorker, defineLimit, defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { leaseClaim, limitRegisterMany } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { countingPool } from '../counting-pool.js';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { waitUntil } from '../wake-state.js';

const t = useTestDatabase();
const track = useWorkers();

const TASKS = 64;
// The worker that takes over sleeps this long between polls: everything below must happen
// through its claims, well inside one poll interval.
const POLL_MS = 120_000;
const DEADLINE_MS = POLL_MS / 4;

/** Whether task `id` is done, by the claim after the crashed worker's (lease version 2). */
async function doneBySecondClaim(id: string): Promise<boolean> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE id = ${id} AND status = 'done' AND lease_version = 2`.execute(t.db);
  return r.rows[0]!.n === 1;
}

/**
 * One task of `name` whose lease a worker that crashed right after its claim holds: it runs out in
 * 1.9 s, with no heartbeat. `started()` counts its handler's runs.
 */
async function crashedLease(name: string) {
  let started = 0;
  const job = defineTask<{ i: number }>(name, {
    handler: () => {
      started++;
    },
  });
  const [task] = await enqueueMany(t.pool, job, [{ payload: { i: 0 } }]);
  const [held] = await claim(t.pool, { owner: 'crashed', batch: 1, lease: 1_900 });
  expect(held!.id).toBe(task!.id);
  return { job, id: task!.id, started: () => started };
}

describe('a crashed worker\'s many expired leases', () => {
  it('are all taken over by the claims that follow the first look, not one batch per poll', async () => {
    const started: string[] = [];
    const job = defineTask<{ i: number }>('takeover-backlog.job', {
      handler: (_p, ctx) => {
        started.push(ctx.task.id);
      },
    });
    const tasks = await enqueueMany(t.pool, job, Array.from({ length: TASKS }, (_, i) => ({ payload: { i } })));
    // the crashed worker's claim; its leases ran out a minute ago (no heartbeat extended them, and
    // no worker was up since), longer ago than the 5 s margin of a look after the first
    const taken = await claim(t.pool, { owner: 'crashed', batch: TASKS, lease: '1m' });
    expect(taken).toHaveLength(TASKS);
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 minute' WHERE lease_owner = 'crashed'`.execute(t.db);

    // two slots and no handler time seen yet: its claims take two rows each
    const worker = track(createWorker({ pool: t.pool, tasks: [job], concurrency: 2, pollInterval: POLL_MS }));
    await worker.start();
    const done = async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE status = 'done' AND lease_version = 2`.execute(t.db)).rows[0]!.n;
    await waitUntil(`all ${TASKS} expired leases taken over and done within a quarter of the poll interval`, async () => (await done()) === TASKS, DEADLINE_MS);
    expect(new Set(started).size).toBe(TASKS);
    expect(started.sort()).toEqual(tasks.map((h) => h.id).sort());
    await worker.stop();
  });

  it('a lease that runs out while the worker sleeps is taken over then, not at its next poll', async () => {
    const { job, id, started } = await crashedLease('takeover-backlog.one');
    // its first claim finds the lease running, and looks ahead for the moment it runs out (a
    // worker whose start took longer than the lease takes it over at its first claim)
    const worker = track(createWorker({ pool: t.pool, tasks: [job], concurrency: 2, pollInterval: POLL_MS }));
    await worker.start();
    await waitUntil('the lease taken over once it ran out, within a quarter of the poll interval', () => doneBySecondClaim(id), DEADLINE_MS);
    expect(started()).toBe(1);
    await worker.stop();
  });

  it("a limited task's lease that runs out while the worker sleeps is taken over then, not at its next poll", async () => {
    let started = 0;
    const limit = defineLimit('takeover-backlog.limit', { concurrency: 1 });
    const job = defineTask<{ i: number }>('takeover-backlog.limited', {
      limit,
      handler: () => {
        started++;
      },
    });
    const [task] = await enqueueMany(t.pool, job, [{ payload: { i: 0 } }]);
    // a worker that crashed right after its claim under the limit: it holds the limit's one slot,
    // and its lease runs out in 1.9 s, with no heartbeat
    const table = taskTable();
    await limitRegisterMany(t.pool, table, 'crashed', [{ limit, taskNames: [job.name] }], [job.name]);
    const held = await leaseClaim(t.pool, table, { owner: 'crashed', batch: 1, leaseMs: 1_900, flows: [limit.name] });
    expect(held.claimed.map((c) => c.id)).toEqual([task!.id]);
    const worker = track(createWorker({ pool: t.pool, tasks: [job], concurrency: 2, pollInterval: POLL_MS }));
    await worker.start();
    await waitUntil("the limited lease taken over once it ran out, within a quarter of the poll interval", () => doneBySecondClaim(task!.id), DEADLINE_MS);
    expect(started).toBe(1);
    await worker.stop();
  });

  it('a claim that fails does not cost the look for expired leases: the lease is still taken over when it runs out', async () => {
    const { job, id, started } = await crashedLease('takeover-backlog.failed-look');
    // the worker's first claim, the one that would look for expired leases and report the one
    // about to run out, fails as a dropped connection would make it fail
    let failed = 0;
    const { pool } = countingPool(t.url, { max: 4 }, (text) => {
      if (failed > 0 || !text.includes('ready AS (')) return undefined;
      failed++;
      return new Error('the first claim failed (simulated)');
    });
    const errors: string[] = [];
    const worker = track(createWorker({ pool, tasks: [job], concurrency: 2, pollInterval: POLL_MS, logger: null }));
    worker.on('worker:error', ({ error }) => errors.push(error.message));
    try {
      await worker.start();
      await waitUntil('the lease taken over once it ran out, within a quarter of the poll interval, after a failed claim', () => doneBySecondClaim(id), DEADLINE_MS);
      expect(failed).toBe(1);
      expect(errors).toContain('the first claim failed (simulated)');
      expect(started()).toBe(1);
    } finally {
      await worker.stop();
      await pool.end();
    }
  });
});
