// A fenced write's cost follows the tasks it writes, not how many other tasks are in flight: with
// 50,000 leases held by other workers, finalizing 1,000 reads about those 1,000 rows (it used to
// hash every processing row of the table, 42 of its 58 ms at that size), and so do a heartbeat
// of 1,000 leases (with stale statistics it took 47 s for 2,000, past the leases it extends) and
// the step records of running workflows.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { leaseExtendMany, leaseFinalizeMany, taskCheckpoint, taskStepRecordMany, toDone, toRetry, type FinalizeItem } from '@leasehold/core/internal';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const IN_FLIGHT = 50_000;
const MINE = 1_000;

const noop = defineTask<{ n: number }>('finalize-scale', { handler: () => {} });

/**
 * 51,000 tasks, all processing at lease_version 1 (as if claimed); returns the ids of the last
 * 1,000. `stats`: whether the table's statistics saw them processing, or (as on a busy queue
 * between two ANALYZE runs) all still pending.
 */
async function leasedTasks(stats: 'current' | 'stale' = 'current'): Promise<string[]> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
  for (let from = 0; from < IN_FLIGHT + MINE; from += 10_000) {
    const n = Math.min(10_000, IN_FLIGHT + MINE - from);
    await enqueueMany(t.pool, noop, Array.from({ length: n }, (_, i) => ({ payload: { n: from + i } })));
  }
  if (stats === 'stale') await sql`ANALYZE leasehold.task`.execute(t.db);
  await sql`UPDATE leasehold.task SET status = 'processing', lease_version = 1, attempts = 1,
              lease_owner = 'other', lease_until = now() + interval '1 hour'`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
  const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id DESC LIMIT ${MINE}`.execute(t.db);
  return rows.map((r) => r.id);
}

const items = (ids: readonly string[], transition: (i: number) => FinalizeItem['transition']): FinalizeItem[] =>
  ids.map((id, i) => ({ id, leaseVersion: 1, transition: transition(i), groupKey: null, parentId: null }));

describe('fenced statements at production sizes', () => {
  it.each(['current', 'stale'] as const)(`with ${IN_FLIGHT.toLocaleString('en')} other leases in flight, finalizing ${MINE.toLocaleString('en')} reads only their rows (%s statistics)`, async (stats) => {
    const mine = await leasedTasks(stats);

    // every item done: the common statement
    const done = await recordStatement((executor) => leaseFinalizeMany(executor, table, items(mine, () => toDone())));
    const doneReads = await statementPlanReads(t.pool, table.table, done);
    expect(doneReads.rowsTouched, doneReads.plan).toBeLessThanOrEqual(2 * MINE);

    // retries and results mixed in: the general statement
    const mixed = await recordStatement((executor) =>
      leaseFinalizeMany(executor, table, items(mine, (i) => (i % 2 === 0 ? toDone() : toRetry(60_000, 'again')))),
    );
    const mixedReads = await statementPlanReads(t.pool, table.table, mixed);
    // the defer-age bound joins each row once more by primary key
    expect(mixedReads.rowsTouched, mixedReads.plan).toBeLessThanOrEqual(3 * MINE);
  });

  it.each(['current', 'stale'] as const)(`with ${IN_FLIGHT.toLocaleString('en')} other leases in flight, a heartbeat of ${MINE.toLocaleString('en')} leases reads only their rows (%s statistics)`, async (stats) => {
    const mine = await leasedTasks(stats);
    const leases = mine.map((id) => ({ id, leaseVersion: 1, leaseMs: 60_000 }));
    // the worker's heartbeat (passing over rows locked elsewhere) and the statement that waits for them
    for (const options of [{ skipLocked: true }, {}]) {
      const heartbeat = await recordStatement((executor) => leaseExtendMany(executor, table, leases, options));
      const reads = await statementPlanReads(t.pool, table.table, heartbeat);
      // each row twice by primary key, once to lock them in id order and once to extend them
      // (2,000 here), with room for a plan that reads a few more; planned on the processing rows'
      // index with stale statistics, it compared each of the 51,000 with each lease: 47 s
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(3 * MINE);
      // and it extends exactly the leases it holds
      const extended = await leaseExtendMany(t.pool, table, [...leases, { id: mine[0]!, leaseVersion: 2, leaseMs: 60_000 }], options);
      expect(extended.size).toBe(MINE);
      expect(extended.get(`${mine[0]}@1`)).toBeInstanceOf(Date);
      expect(extended.has(`${mine[0]}@2`)).toBe(false);
    }
  });

  it.each(['current', 'stale'] as const)(`with ${IN_FLIGHT.toLocaleString('en')} other leases in flight, recording the steps of 16 running workflows reads only their rows (%s statistics)`, async (stats) => {
    const mine = (await leasedTasks(stats)).slice(0, 16);
    const steps = mine.map((id) => ({ taskId: id, leaseVersion: 1, name: 'charge', resultJson: '{"ok":true}', position: 0 }));
    const record = await recordStatement((executor) => taskStepRecordMany(executor, table, steps));
    const reads = await statementPlanReads(t.pool, table.table, record);
    // planned on the processing rows' index with stale statistics, 16 steps compared each of
    // the 51,000 rows with each step: 355 ms
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * steps.length);
    // a stale token records nothing
    const written = await taskStepRecordMany(t.pool, table, [...steps, { taskId: mine[0]!, leaseVersion: 2, name: 'refund', resultJson: null, position: 1 }]);
    expect([...written].sort()).toEqual(mine.map((id) => `${id}/charge`).sort());
  });

  it.each(['current', 'stale'] as const)(`with ${IN_FLIGHT.toLocaleString('en')} other leases in flight, a checkpoint of one task reads only its row (%s statistics)`, async (stats) => {
    const [mine] = await leasedTasks(stats);
    // the one-row fence (checkpoints, a step's fence lock, parking): planned on the processing
    // rows' index with stale statistics, it read all 51,000 rows to find its own
    const checkpoint = await recordStatement((executor) => taskCheckpoint(executor, table, { id: mine!, leaseVersion: 1 }, '{"page":3}'));
    const reads = await statementPlanReads(t.pool, table.table, checkpoint);
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(1);
    // the fence still decides: a stale token writes nothing, the current one writes
    expect(await taskCheckpoint(t.pool, table, { id: mine!, leaseVersion: 2 }, '{"page":4}')).toBe(false);
    expect(await taskCheckpoint(t.pool, table, { id: mine!, leaseVersion: 1 }, '{"page":3}')).toBe(true);
    const { rows } = await sql<{ checkpoint: unknown }>`SELECT checkpoint FROM leasehold.task WHERE id = ${mine}`.execute(t.db);
    expect(rows[0]!.checkpoint).toEqual({ page: 3 });
  });

  it('a batch of done writes reports each refused token, and only those', async () => {
    const mine = await leasedTasks();
    const batch = items(mine, () => toDone());
    // a stale token of one of them, and a token this batch never held
    batch.push({ id: mine[0]!, leaseVersion: 0, transition: toDone(), groupKey: null, parentId: null });
    batch.push({ id: mine[1]!, leaseVersion: 2, transition: toDone(), groupKey: null, parentId: null });
    const results = await leaseFinalizeMany(t.pool, table, batch);
    expect(results.slice(0, MINE).every((r) => r.won && r.status === 'done')).toBe(true);
    expect(results.slice(MINE)).toEqual([
      { id: mine[0], won: false, status: null },
      { id: mine[1], won: false, status: null },
    ]);
    // the same tokens again: every one refused now (the rows left processing)
    const again = await leaseFinalizeMany(t.pool, table, batch.slice(0, 3));
    expect(again.map((r) => r.won)).toEqual([false, false, false]);
    const { rows } = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM leasehold.task GROUP BY 1 ORDER BY 1`.execute(t.db);
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([
      ['done', MINE],
      ['processing', IN_FLIGHT],
    ]);
  });
});
