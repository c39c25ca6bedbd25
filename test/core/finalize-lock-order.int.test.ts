// A batched fenced write sends its rows in id order, so a plan that reaches them by primary key
// locks them in id order, as a finalize that locks parents first does. (A bitmap scan of a table
// whose rows no longer lie in id order reaches them by page; the heartbeat, which touches the same
// rows at once, passes over a locked row instead of waiting: test/core/heartbeat.int.test.ts.)
// The batch arrives in completion order; here, the reverse of id order. A cancel of a tree locks
// its rows in id order too, before its write, and after its groups' rows, which a write that ends
// a child also locks before the parent.
import { sql } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { cancelTask, defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { leaseFinalizeMany, toDone, toRetry, type FinalizeItem } from '@leasehold/core/internal';
import { useTestDatabase, waitForLockWaiters } from '../fixtures.js';
import { gate } from '../workers.js';

const t = useTestDatabase();
const table = taskTable();
const ROWS = 400;

const noop = defineTask<{ n: number }>('finalize-lock-order', { handler: () => {} });

/** Whether another transaction holds `id` locked: `probe` asks for it without waiting. */
async function lockedElsewhere(probe: pg.ClientBase, id: string): Promise<boolean> {
  return probe.query('SELECT id FROM leasehold.task WHERE id = $1 FOR NO KEY UPDATE NOWAIT', [id]).then(
    () => false,
    (error: { code?: string }) => {
      if (error.code === '55P03') return true; // lock_not_available
      throw error;
    },
  );
}

async function leasedTasks(): Promise<string[]> {
  await sql`TRUNCATE leasehold.task`.execute(t.db);
  await enqueueMany(t.pool, noop, Array.from({ length: ROWS }, (_, n) => ({ payload: { n } })));
  await sql`UPDATE leasehold.task SET status = 'processing', lease_version = 1, attempts = 1,
              lease_owner = 'me', lease_until = now() + interval '1 hour'`.execute(t.db);
  await sql`ANALYZE leasehold.task`.execute(t.db);
  const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id DESC`.execute(t.db);
  return rows.map((r) => r.id);
}

describe('a batched fenced write locks in id order', () => {
  it.each([
    ['every row done', () => toDone()],
    ['done and retried rows mixed', (i: number) => (i % 2 === 0 ? toDone() : toRetry(1_000, 'again'))],
  ] as const)('%s: while it waits on the highest id, it already holds the lowest', async (_name, transition) => {
    const descending = await leasedTasks();
    const highest = descending[0]!;
    const lowest = descending.at(-1)!;
    const holder = await t.client();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM leasehold.task WHERE id = $1 FOR NO KEY UPDATE', [highest]);

    const items: FinalizeItem[] = descending.map((id, i) => ({ id, leaseVersion: 1, transition: transition(i), groupKey: null, parentId: null }));
    const finalizing = leaseFinalizeMany(t.pool, table, items);
    await waitForLockWaiters(t.db);

    const lowestHeld = await lockedElsewhere(await t.client(), lowest);
    await holder.query('ROLLBACK');
    const results = await finalizing;
    expect(lowestHeld).toBe(true);
    expect(results.map((r) => r.id)).toEqual(descending); // answered in the caller's order
    expect(results.every((r) => r.won)).toBe(true);
  });
});

describe('a write that ends children locks the parents and its own rows in one id order', () => {
  it('while it waits on its lowest row, the parent above it is still free: a heartbeat holding that row takes the parent next without a deadlock', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    // in id order: another workflow's row ending in the same batch, a parent, its child
    await enqueueMany(t.pool, noop, [0, 1, 2].map((n) => ({ payload: { n } })));
    const [other, parent, child] = (await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id`.execute(t.db)).rows.map((r) => String(r.id));
    await sql`UPDATE leasehold.task SET status = 'processing', lease_version = 1, attempts = 1, lease_owner = 'me', lease_until = now() + interval '1 hour'`.execute(t.db);
    await sql`UPDATE leasehold.task SET parent_id = ${parent} WHERE id = ${child}`.execute(t.db);

    // the worker's heartbeat locks its rows in id order: it holds the lowest first
    const heartbeat = await t.client();
    await heartbeat.query('BEGIN');
    await heartbeat.query('SELECT id FROM leasehold.task WHERE id = $1 FOR NO KEY UPDATE', [other]);

    const items: FinalizeItem[] = [
      { id: child!, leaseVersion: 1, transition: toDone(), groupKey: null, parentId: parent! },
      { id: other!, leaseVersion: 1, transition: toDone(), groupKey: null, parentId: null },
    ];
    const finalizing = leaseFinalizeMany(t.pool, table, items);
    await waitForLockWaiters(t.db);
    // the heartbeat goes on to the parent: a write that had locked the parent before its lower
    // row would hold it now, and the two would wait for each other
    const parentFree = !(await lockedElsewhere(heartbeat, parent!));
    await heartbeat.query('ROLLBACK');
    const results = await finalizing;
    expect(parentFree).toBe(true);
    expect(results.every((r) => r.won)).toBe(true);
  });
});

describe('a cancel of a tree locks its rows in id order', () => {
  it('while it waits on a row its scan meets first, it already holds a lower one that lies on a later page', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    await enqueueMany(t.pool, noop, Array.from({ length: ROWS + 1 }, (_, n) => ({ payload: { n } })));
    const ids = (await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id`.execute(t.db)).rows.map((r) => String(r.id));
    const [parent, ...children] = ids;
    await sql`UPDATE leasehold.task SET parent_id = ${parent} WHERE id <> ${parent}`.execute(t.db);
    // the lowest children's rows move to the table's end, as a table's history scatters its rows
    // (a snapshot held meanwhile keeps their old versions, so no page has room for the new ones)
    const snapshot = await t.client();
    await snapshot.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await snapshot.query('SELECT count(*) FROM leasehold.task');
    const lowest = children.slice(0, 50);
    await sql`UPDATE leasehold.task SET status = 'waiting' WHERE id = ANY(${lowest}::bigint[])`.execute(t.db);
    await sql`UPDATE leasehold.task SET status = 'pending' WHERE id = ANY(${lowest}::bigint[])`.execute(t.db);
    await snapshot.query('ROLLBACK');
    await sql`ANALYZE leasehold.task`.execute(t.db);
    // the last row by page, and the first by page of those above it in id
    const byPage = (await sql<{ id: string }>`SELECT id FROM leasehold.task WHERE id <> ${parent} ORDER BY ctid`.execute(t.db)).rows.map((r) => String(r.id));
    const last = byPage.at(-1)!;
    const first = byPage.find((id) => BigInt(id) > BigInt(last));
    expect(first, 'a row above the last one by page lies on an earlier page').toBeDefined();
    // another transaction holds that first row, as a worker's write of its end would
    const holder = await t.client();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM leasehold.task WHERE id = $1 FOR NO KEY UPDATE', [first]);
    // the plan a table with a history gets: by page, not by id
    const canceller = await t.client();
    await canceller.query('SET enable_indexscan = off');
    const cancelling = cancelTask(canceller, parent!);
    await waitForLockWaiters(t.db);
    const lastHeld = await lockedElsewhere(await t.client(), last);
    await holder.query('ROLLBACK');
    const { cancelled } = await cancelling;
    expect(lastHeld).toBe(true);
    expect(cancelled).toHaveLength(ROWS + 1);
  });
});

describe("a write that ends a child of an ordered group locks the group's row before the parent", () => {
  it('beside a cancel of the tree, which locks the group first and then the tree: neither waits for the other in a cycle', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
    await enqueueMany(t.pool, noop, [0, 1].map((n) => ({ payload: { n } })));
    const [parent, child] = (await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id`.execute(t.db)).rows.map((r) => String(r.id));
    // a workflow waiting for its child, the head of the ordered group 'g', which a worker runs
    await sql`UPDATE leasehold.task SET status = 'waiting', wait_for = 'children' WHERE id = ${parent}`.execute(t.db);
    await sql`UPDATE leasehold.task SET parent_id = ${parent}, group_key = 'g', status = 'processing', lease_version = 1, attempts = 1,
                lease_owner = 'me', lease_until = now() + interval '1 hour' WHERE id = ${child}`.execute(t.db);
    await sql`INSERT INTO leasehold.task_group (group_key, head_id) VALUES ('g', ${child})`.execute(t.db);

    // the cancel stops after locking the group's row, before it locks the tree's rows
    const canceller = await t.client();
    const treeLock = gate();
    let paused = false;
    const query = canceller.query.bind(canceller) as (...args: unknown[]) => unknown;
    (canceller as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | null)?.text ?? '');
      if (!paused && /status = 'cancelled'/.test(text)) {
        paused = true;
        return treeLock.wait.then(() => query(...args));
      }
      return query(...args);
    };
    const cancelling = cancelTask(canceller, parent!);
    await expect.poll(() => paused, { timeout: 10_000 }).toBe(true);

    // the worker's write of the child's end waits for the group's row; a write that had locked
    // the parent first would hold it now, and the cancel, let go, would wait for it in a cycle
    const finalizing = leaseFinalizeMany(t.pool, table, [{ id: child!, leaseVersion: 1, transition: toDone(), groupKey: 'g', parentId: parent! }]);
    await waitForLockWaiters(t.db);
    const parentFree = !(await lockedElsewhere(await t.client(), parent!));
    treeLock.open();
    const [{ cancelled }, [written]] = await Promise.all([cancelling, finalizing]);
    expect(parentFree).toBe(true);
    expect(cancelled).toEqual([parent, child]);
    // the fence refused the write: the cancel came first (and nothing was unblocked)
    expect(written).toEqual({ id: child, won: false, status: null, unblockedFrom: null });
    const { rows } = await sql<{ status: string }>`SELECT status FROM leasehold.task WHERE id = ${child}`.execute(t.db);
    expect(rows[0]!.status).toBe('cancelled');
  });
});
