// What core reads about workflow change safety (issue 31), from rows as the runtime writes them:
// unfinished runs per task version and whether a live worker accepts each, how many runs still
// need a patch's old branch, and the dead runs that failed replay.
import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { createWorker, defineTask, enqueue, nonDeterminismDeadCounts, patchUsage, taskVersions, type TaskContext } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { seedMarker, seedNonDeterminismDead, seedRun, seedWorker } from './version-seed.js';

const t = useTestDatabase();
const track = useWorkers();
const MIN = 60_000;

describe('taskVersions', () => {
  it('counts unfinished runs per name and version, and which ones a live worker accepts', async () => {
    await seedRun(t.db, { name: 'order', version: 1, createdAgoMs: 90 * MIN });
    await seedRun(t.db, { name: 'order', version: 1 });
    await seedRun(t.db, { name: 'order', version: 1, status: 'processing' });
    await seedRun(t.db, { name: 'order', version: 1, status: 'waiting', scheduled: true });
    await seedRun(t.db, { name: 'order', version: 1, status: 'waiting' }); // until a signal comes
    for (const status of ['done', 'dead'] as const) await seedRun(t.db, { name: 'order', version: 1, status, createdAgoMs: 600 * MIN });
    await seedRun(t.db, { name: 'order', version: 2 });
    await seedRun(t.db, { name: 'order', version: 2, status: 'waiting' });
    await seedRun(t.db, { name: 'mail', version: 1 });
    await seedRun(t.db, { name: 'archived', version: 3, status: 'done' });
    // no worker reports what it accepts (as before core migration 11): unknown, not "none"
    const unreported = await taskVersions(t.pool);
    expect(unreported.workers).toEqual([]);
    expect(unreported.versions.map((v) => v.acceptedBy)).toEqual([null, null, null]);

    await seedWorker(t.db, 'new-worker', { order: [2], mail: [1] });
    await seedWorker(t.db, 'old-worker', { order: [1] }, 10 * MIN); // stopped reporting: dead

    const { versions, workers } = await taskVersions(t.pool);
    expect(workers.map((w) => [w.owner, w.accepts])).toEqual([['new-worker', { order: [2], mail: [1] }]]);
    expect(versions.map((v) => ({ name: v.name, version: v.version, pending: v.pending, processing: v.processing, waiting: v.waiting, acceptedBy: v.acceptedBy }))).toEqual([
      { name: 'mail', version: 1, pending: 1, processing: 0, waiting: 0, acceptedBy: 1 },
      { name: 'order', version: 1, pending: 2, processing: 1, waiting: 2, acceptedBy: 0 },
      { name: 'order', version: 2, pending: 1, processing: 0, waiting: 1, acceptedBy: 1 },
    ]);
    const v1 = versions[1]!;
    expect(v1.oldestAgeMs).toBeGreaterThanOrEqual(90 * MIN);
    expect(v1.oldestAgeMs).toBeLessThan(100 * MIN);
    expect(v1.oldestPendingAgeMs).toBeGreaterThanOrEqual(90 * MIN);

    // a wider window counts the old worker as live: then it accepts version 1
    const wide = await taskVersions(t.pool, { liveWithin: '1h' });
    expect(wide.workers.map((w) => w.owner)).toEqual(['new-worker', 'old-worker']);
    expect(wide.versions.find((v) => v.name === 'order' && v.version === 1)?.acceptedBy).toBe(1);
  });

  it('refuses an invalid schema or window before it reads anything', async () => {
    await expect(taskVersions(t.pool, { schema: 'no such"schema' })).rejects.toThrow(/schema/);
    await expect(taskVersions(t.pool, { liveWithin: 'soon' })).rejects.toThrow(/liveWithin/);
  });
});

describe('patchUsage', () => {
  it('counts, per patch, the unfinished runs on the new path, on the old path and not yet decided', async () => {
    const name = 'checkout';
    const oldPath = await seedRun(t.db, { name, createdAgoMs: 120 * MIN });
    await seedMarker(t.db, oldPath, 'charge-first', false, 60 * MIN);
    await seedRun(t.db, { name, status: 'waiting', createdAgoMs: 120 * MIN }); // unmarked, older than the first true: undecided
    const newPath = await seedRun(t.db, { name, status: 'waiting', scheduled: true, createdAgoMs: 90 * MIN });
    await seedMarker(t.db, newPath, 'charge-first', true, 50 * MIN);
    await seedRun(t.db, { name, createdAgoMs: 10 * MIN }); // unmarked, started after the patch was taken
    const other = await seedRun(t.db, { name, status: 'processing', createdAgoMs: 60 * MIN }); // unmarked for charge-first: undecided
    await seedMarker(t.db, other, 'receipt', true, 30 * MIN);
    // finished runs count for nothing, their markers neither (an earlier true does not move firstNewAt)
    const finished = await seedRun(t.db, { name, status: 'done', createdAgoMs: 300 * MIN });
    await seedMarker(t.db, finished, 'charge-first', true, 200 * MIN);
    const elsewhere = await seedRun(t.db, { name: 'refund' });
    await seedMarker(t.db, elsewhere, 'charge-first', false);

    const rows = await patchUsage(t.pool, { task: name });
    expect(rows.map((r) => ({ task: r.task, patch: r.patch, newPath: r.newPath, oldPath: r.oldPath, undecided: r.undecided }))).toEqual([
      { task: name, patch: 'charge-first', newPath: 1, oldPath: 1, undecided: 2 },
      { task: name, patch: 'receipt', newPath: 1, oldPath: 0, undecided: 3 },
    ]);
    const first = rows[0]!.firstNewAt!;
    const { rows: [marker] } = await t.pool.query<{ created_at: Date }>(
      `SELECT created_at FROM leasehold.task_step WHERE task_id = $1 AND name = 'patch:charge-first'`, [newPath]);
    expect(first.getTime()).toBe(marker!.created_at.getTime());

    // by patch alone: every task that recorded it
    const byPatch = await patchUsage(t.pool, { patch: 'charge-first' });
    expect(byPatch.map((r) => [r.task, r.newPath, r.oldPath, r.undecided])).toEqual([[name, 1, 1, 2], ['refund', 0, 1, 0]]);
    // every patch of every task
    expect((await patchUsage(t.pool)).map((r) => `${r.task}/${r.patch}`)).toEqual([`${name}/charge-first`, `${name}/receipt`, 'refund/charge-first']);
  });

  it('reports a patch asked for by task and id even when no unfinished run recorded it: every unmarked run is undecided', async () => {
    await seedRun(t.db, { name: 'renew', createdAgoMs: 5 * MIN });
    await seedRun(t.db, { name: 'renew', status: 'waiting' });
    await seedRun(t.db, { name: 'renew', status: 'done' });
    expect(await patchUsage(t.pool, { task: 'renew', patch: 'grace-period' })).toEqual([
      { task: 'renew', patch: 'grace-period', newPath: 0, oldPath: 0, undecided: 2, firstNewAt: null },
    ]);
    expect(await patchUsage(t.pool, { task: 'nothing-runs', patch: 'grace-period' })).toEqual([
      { task: 'nothing-runs', patch: 'grace-period', newPath: 0, oldPath: 0, undecided: 0, firstNewAt: null },
    ]);
    expect(await patchUsage(t.pool, { patch: 'grace-period' })).toEqual([]);
  });

  it('refuses an empty task or patch name', async () => {
    await expect(patchUsage(t.pool, { task: '' })).rejects.toThrow(/task/);
    await expect(patchUsage(t.pool, { patch: '' })).rejects.toThrow(/patch/);
  });
});

describe('nonDeterminismDeadCounts', () => {
  it('counts the dead runs that failed replay per name and version, and no other dead run', async () => {
    await seedNonDeterminismDead(t.db, 'ship', 1);
    await seedNonDeterminismDead(t.db, 'ship', 1);
    await seedNonDeterminismDead(t.db, 'ship', 2);
    await seedRun(t.db, { name: 'ship', status: 'dead', lastError: 'Error: carrier down' });
    await seedRun(t.db, { name: 'ship', status: 'dead', lastError: 'PermanentError: NonDeterminismError: quoted' });
    expect(await nonDeterminismDeadCounts(t.pool)).toEqual([
      { name: 'ship', version: 1, dead: 2 },
      { name: 'ship', version: 2, dead: 1 },
    ]);
  });
});

describe('over what the runtime writes', () => {
  it('counts a run the changed code could not replay, a patch a run took, and the versions a live worker accepts', async () => {
    const name = 'deploy-flow';
    const before = defineTask(name, {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('reserve', () => 'r');
        await ctx.sleep('cool-off', '1h');
      },
    });
    const old = await enqueue(t.pool, before, {});
    const first = track(createWorker({ pool: t.pool, tasks: [before], pollInterval: 20, logger: null }));
    const parked = nextEvent(first, 'task:suspended', ({ task }) => task.id === old.id);
    await first.start();
    await parked;
    await first.stop();

    // the deploy: a step inserted before the recorded one, wrongly declared able to run version 1
    // runs, and a patch for new runs
    const after = defineTask(name, {
      version: 2,
      accepts: [1],
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('check-stock', () => true);
        if (await ctx.patched('check-stock-first')) await ctx.sleep('cool-off', '1h');
      },
    });
    const fresh = await enqueue(t.pool, after, {});
    await sql`UPDATE leasehold.task SET available_at = now() WHERE id = ${old.id}`.execute(t.db); // its sleep is over
    const second = track(createWorker({ pool: t.pool, tasks: [after], pollInterval: 20, logger: null }));
    const died = nextEvent(second, 'task:dead', ({ task }) => task.id === old.id);
    const freshParked = nextEvent(second, 'task:suspended', ({ task }) => task.id === fresh.id);
    await second.start();
    try {
      await Promise.all([died, freshParked]);
      expect(await nonDeterminismDeadCounts(t.pool)).toContainEqual({ name, version: 1, dead: 1 });
      expect(await patchUsage(t.pool, { task: name })).toEqual([
        { task: name, patch: 'check-stock-first', newPath: 1, oldPath: 0, undecided: 0, firstNewAt: expect.any(Date) },
      ]);
      await vi.waitFor(async () => {
        const { versions, workers } = await taskVersions(t.pool);
        expect(workers.flatMap((w) => w.accepts[name] ?? [])).toEqual([1, 2]); // the seeded workers accept other names
        expect(versions.filter((v) => v.name === name)).toEqual([expect.objectContaining({ version: 2, waiting: 1, acceptedBy: 1 })]);
      });
    } finally {
      await second.stop();
    }
  });
});
