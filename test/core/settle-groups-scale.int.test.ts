// Handing ordering groups their next heads costs what it changes, not how many rows the table
// holds: the statement that settles the groups of a finished batch (every fenced write of ordered
// rows to done, every ordered enqueue, cancel and dead-row skip) used to join its few hundred
// groups to the table, and with statistics taken while the table was empty the planner scanned
// the whole table twice for it.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { leaseLockGroups, leaseSettleGroups } from '@leasehold/core/internal';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const GROUPS = 500;
const PER_GROUP = 40;
const FINISHED = 250;

const step = defineTask<{ n: number }>('settle-scale', { ordered: true, handler: () => {} });
const finishedKeys = Array.from({ length: FINISHED }, (_, g) => `group-${g}`);

/** 20,000 ordered rows in 500 groups, the heads of 250 of them finished. */
async function groupsWithFinishedHeads(stats: 'current' | 'empty'): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
  // empty: as a table gets them when it was analysed before its first busy hour
  if (stats === 'empty') await sql`ANALYZE leasehold.task`.execute(t.db);
  for (let n = 0; n < PER_GROUP; n++) {
    await enqueueMany(t.pool, step, Array.from({ length: GROUPS }, (_, g) => ({ payload: { n }, groupKey: `group-${g}` })));
  }
  await sql`UPDATE leasehold.task SET status = 'done', done_at = now()
            WHERE NOT blocked AND status = 'pending' AND group_key = ANY(${finishedKeys}::text[])`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
}

describe('ordering groups settled at production sizes', () => {
  it.each(['current', 'empty'] as const)(
    `settling ${FINISHED} groups beside ${(GROUPS * PER_GROUP).toLocaleString('en')} rows reads a few rows per group (%s statistics)`,
    async (stats) => {
      await groupsWithFinishedHeads(stats);
      const settle = await recordStatement((executor) => leaseSettleGroups(executor, table, finishedKeys));
      const reads = await statementPlanReads(t.pool, table.table, settle);
      // per group: its head by primary key, its next blocked row, that row again to unblock it
      // (750 here), with room for a plan that reads a few more; joined, it read all 20,000 twice
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(4 * FINISHED);
    },
  );

  it('hands each settled group its next row and leaves the others alone', async () => {
    await groupsWithFinishedHeads('current');
    // under the groups' locks, as every caller holds them (a group that has no row is ignored)
    const promoted = await t.db.transaction().execute(async (trx) => {
      await leaseLockGroups(trx, table, [...finishedKeys, 'group-499']);
      return leaseSettleGroups(trx, table, [...finishedKeys, 'group-499', 'group-none']);
    });
    expect(promoted).toBe(FINISHED);
    const { rows } = await sql<{ group_key: string; n: number }>`
      SELECT group_key, payload->>'n' AS n FROM leasehold.task WHERE NOT blocked AND status = 'pending' ORDER BY group_key COLLATE "C"`.execute(t.db);
    const heads = new Map(rows.map((r) => [r.group_key, Number(r.n)]));
    expect(heads.size).toBe(GROUPS);
    // a finished group's head is its second row; an untouched group keeps its first
    expect(heads.get('group-0')).toBe(1);
    expect(heads.get(`group-${FINISHED - 1}`)).toBe(1);
    expect(heads.get(`group-${FINISHED}`)).toBe(0);
    expect(heads.get('group-499')).toBe(0);
    const groups = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task_group`.execute(t.db);
    expect(Number(groups.rows[0]!.n)).toBe(GROUPS);
  });
});
