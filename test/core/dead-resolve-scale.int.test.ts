// Retrying or skipping dead rows costs what it changes, not how many rows the table keeps: with
// 51,000 dead rows, retrying 1,000 used to hash every dead row and scan the whole table for the
// statuses it reports back (a table keeping a million finished rows scanned them all per batch).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, leaseRetryDeadMany, leaseSkipDeadMany, taskTable } from '@leasehold/core';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const DEAD = 51_000;
const MINE = 1_000;

const noop = defineTask<{ n: number }>('dead-resolve-scale', { handler: () => {} });

/** 51,000 dead tasks; returns the ids of the last 1,000, and the first id (a row left alone). */
async function deadTasks(stats: 'current' | 'stale'): Promise<string[]> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
  for (let from = 0; from < DEAD; from += 10_000) {
    await enqueueMany(t.pool, noop, Array.from({ length: Math.min(10_000, DEAD - from) }, (_, i) => ({ payload: { n: from + i } })));
  }
  // stale: taken while every row was still pending, as between two ANALYZE runs of a busy table
  if (stats === 'stale') await sql`ANALYZE leasehold.task`.execute(t.db);
  await sql`UPDATE leasehold.task SET status = 'dead', attempts = 12, last_error = 'boom', lease_version = 1`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
  const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id DESC LIMIT ${MINE}`.execute(t.db);
  return rows.map((r) => r.id);
}

describe('dead rows resolved at production sizes', () => {
  it.each(['current', 'stale'] as const)(`retrying ${MINE.toLocaleString('en')} of ${DEAD.toLocaleString('en')} dead rows reads only those rows (%s statistics)`, async (stats) => {
    const mine = await deadTasks(stats);
    const retry = await recordStatement((executor) => leaseRetryDeadMany(executor, table, mine, 'fixed'));
    const reads = await statementPlanReads(t.pool, table.table, retry);
    // each row twice by primary key, to change it and to report its status (2,000 here), with
    // room for a plan that reads a few more; joined plainly, it read every dead row and the table
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(3 * MINE);
  });

  it('reports every id: the dead ones changed, a missing one and one no longer dead rejected', async () => {
    const mine = await deadTasks('current');
    const first = await leaseRetryDeadMany(t.pool, table, mine.slice(0, 10), 'fixed');
    expect(first.changed).toEqual([...mine.slice(0, 10)].sort((a, b) => Number(a) - Number(b)));
    // the same ten again (now pending), an id that does not exist, and ten still dead
    const missing = String(Number(mine[0]) + 1_000_000);
    const again = await leaseSkipDeadMany(t.pool, table, [...mine.slice(0, 20), missing], 'replayed');
    expect(again.changed).toEqual([...mine.slice(10, 20)].sort((a, b) => Number(a) - Number(b)));
    expect(again.rejected).toEqual([
      ...[...mine.slice(0, 10)].sort((a, b) => Number(a) - Number(b)).map((id) => ({ id, status: 'pending' })),
      { id: missing, status: null },
    ]);
    const { rows } = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM leasehold.task GROUP BY 1 ORDER BY 1`.execute(t.db);
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([
      ['dead', DEAD - 20],
      ['done', 10],
      ['pending', 10],
    ]);
  });
});
