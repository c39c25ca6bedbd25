// A fenced write that finishes ordered rows locks their groups before it hands each group its
// next head. The lock is a row lock on the group's row, taken without writing the row (the
// upsert producers use wrote a new version of it for every finished row); it still holds a
// producer of that group back until the finisher commits, and a group that has lost its row
// still gets its next head.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { enqueueMany, defineTask, taskTable } from '@leasehold/core';
import { leaseFinalizeMany, leaseLockFinishingGroups, toDone } from '@leasehold/core/internal';
import { insertTasks, useTestDatabase, waitForLockWaiters } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const ordered = defineTask<{ n: number }>('finish-group-lock', { handler: () => {} });

const groupRow = async (key: string) =>
  (await sql<{ xmin: string; head_id: string | null }>`SELECT xmin::text, head_id FROM leasehold.task_group WHERE group_key = ${key}`.execute(t.db)).rows[0];
const rowsOf = async (key: string) =>
  (await sql<{ id: string; status: string; blocked: boolean }>`SELECT id, status, blocked FROM leasehold.task WHERE group_key = ${key} ORDER BY id`.execute(t.db)).rows;

describe('the lock of a finisher on its groups', () => {
  it('writes no new version of the group row, and holds a producer of the group back until commit', async () => {
    const [head] = await insertTasks(t.db, 1, { groupKey: 'g-1', status: 'processing', leaseVersion: 1, attempts: 1, leaseUntilOffsetMs: 60_000 });
    await insertTasks(t.db, 1, { groupKey: 'g-1' });
    const finisher = await t.client();
    await finisher.query('BEGIN');
    await leaseLockFinishingGroups(finisher, table, ['g-1', 'g-1']);
    const adding = enqueueMany(t.pool, ordered, [{ payload: { n: 1 }, groupKey: 'g-1' }]);
    await waitForLockWaiters(t.db);
    await finisher.query('COMMIT');
    await adding;
    // the producer's upsert wrote the row after the lock; the lock itself wrote nothing
    const after = await groupRow('g-1');
    expect(after?.head_id).toBe(head);
    expect((await rowsOf('g-1')).map((r) => r.blocked)).toEqual([false, true, true]);
    const locked = await t.client();
    await locked.query('BEGIN');
    const seen = (await groupRow('g-1'))!.xmin;
    await leaseLockFinishingGroups(locked, table, ['g-1']);
    await locked.query('COMMIT');
    expect((await groupRow('g-1'))!.xmin).toBe(seen);
  });

  it('finishing a head whose group lost its row still hands the group its next head', async () => {
    const [head] = await insertTasks(t.db, 1, { groupKey: 'g-2', status: 'processing', leaseVersion: 1, attempts: 1, leaseUntilOffsetMs: 60_000 });
    const [next] = await insertTasks(t.db, 1, { groupKey: 'g-2' });
    expect((await rowsOf('g-2')).map((r) => r.blocked)).toEqual([false, true]);
    await sql`DELETE FROM leasehold.task_group WHERE group_key = 'g-2'`.execute(t.db);
    const [result] = await leaseFinalizeMany(t.pool, table, [{ id: head!, leaseVersion: 1, transition: toDone(), groupKey: 'g-2' }]);
    expect(result?.won).toBe(true);
    expect(await rowsOf('g-2')).toEqual([
      { id: head, status: 'done', blocked: false },
      { id: next, status: 'pending', blocked: false },
    ]);
    expect((await groupRow('g-2'))?.head_id).toBe(next);
  });
});
