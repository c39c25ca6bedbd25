// Issue 11, at the sizes that broke the old claim: a long queue behind one group, rows scheduled
// for later, 100,000 groups in one batch, and concurrent batches sharing dedup keys.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claim, createWorker, defineTask, enqueue, enqueueMany, markDead, taskTable, type TaskDefinition } from '@leasehold/core';
import { leaseClaim } from '@leasehold/core/internal';
import { claimedRecords } from '../../packages/core/src/sql/claimed-records.js';
import { claimPlanReads, PLAN_KINDS, recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const table = taskTable();
const BATCH = 50;

/** The claim a worker sends when a notification wakes it (docs/ordering.md, "The ready-only claim"). */
const readyOnlyClaim = () => recordStatement((recorder) => leaseClaim(recorder, table, { owner: 'explain', batch: BATCH, leaseMs: 60_000, readyOnly: true }));

const handled: number[] = [];
const sync: TaskDefinition<{ n: number }> = defineTask<{ n: number }>('sync', {
  ordered: true,
  handler: ({ n }) => void handled.push(n),
});

async function statusCounts(): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; blocked: boolean; n: string }>`
    SELECT status, blocked, count(*) AS n FROM leasehold.task GROUP BY 1, 2`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [`${r.status}${r.blocked ? ' blocked' : ''}`, Number(r.n)]));
}

describe('claims at production sizes', () => {
  it('50,000 tasks behind a dead head and 20,000 behind a healthy one: the claim reads none of them, and 1,000 other groups flow', async () => {
    // a dead head, then 50,000 behind it
    await enqueue(t.pool, sync, { n: -1 }, { groupKey: 'stuck' });
    const [head] = await claim(t.pool, { owner: 'test', batch: 1, lease: '1m' });
    expect(await markDead(t.pool, head!, { error: 'permanent: bad account' })).toBe(true);
    const behind = (n: number, groupKey: string) => Array.from({ length: n }, (_, i) => ({ payload: { n: i }, groupKey }));
    await enqueueMany(t.pool, sync, behind(50_000, 'stuck'));
    // a healthy head with 20,000 behind it
    await enqueueMany(t.pool, sync, behind(20_001, 'busy'));
    await sql`ANALYZE leasehold.task`.execute(t.db);

    // planned for its values, and generic (a worker's claims from their first: Listener)
    for (const plan of PLAN_KINDS) {
      const reads = await claimPlanReads(t.pool, table, BATCH, undefined, undefined, plan);
      // 1 claimable row (busy's head): what the claim reads is bounded by its batch, not by 70,000
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(4 * BATCH);
      expect(reads.rowsDiscarded, reads.plan).toBeLessThanOrEqual(BATCH);
      const readyOnly = await statementPlanReads(t.pool, table.table, await readyOnlyClaim(), plan);
      expect(readyOnly.rowsTouched, readyOnly.plan).toBeLessThanOrEqual(2 * BATCH);
    }

    await enqueueMany(t.pool, sync, Array.from({ length: 1_000 }, (_, i) => ({ payload: { n: 100_000 + i }, groupKey: `order-${i}` })));
    for (const plan of PLAN_KINDS) {
      const withOthers = await claimPlanReads(t.pool, table, BATCH, undefined, undefined, plan);
      expect(withOthers.rowsTouched, withOthers.plan).toBeLessThanOrEqual(4 * BATCH);
    }

    handled.length = 0;
    const worker = track(createWorker({ pool: t.pool, tasks: [sync], concurrency: 8, prefetch: 40 }));
    await worker.start();
    await expect
      .poll(() => handled.filter((n) => n >= 100_000).length, { timeout: 60_000, interval: 50 })
      .toBe(1_000);
    await worker.stop();
    // the busy group advanced in order, one at a time; the stuck one did not move
    const busy = handled.filter((n) => n < 100_000);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy).toEqual(busy.map((_, i) => i));
    const counts = await statusCounts();
    expect(counts['dead']).toBe(1);
    expect(counts['pending blocked']).toBe(50_000 + 20_000 - busy.length);
  });

  it('50,000 parked runs with 500,000 records, 50 of them due: the claim reads and closes only the due runs\' records', async () => {
    const napper = defineTask<{ n: number }>('napper', { handler: () => {} });
    await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
    await enqueueMany(t.pool, napper, Array.from({ length: 50_000 }, (_, n) => ({ payload: { n } })));
    // each run recorded nine steps under its first lease and parked on a sleep: 50 are due
    await sql`
      UPDATE leasehold.task SET status = 'waiting', scheduled = true, lease_version = 1, wait_for = 'sleep:nap',
        available_at = CASE WHEN (payload->>'n')::int < ${BATCH} THEN now() - interval '1 second' ELSE now() + interval '1 hour' END`.execute(t.db);
    await sql`
      INSERT INTO leasehold.task_step (task_id, name, done, result, wake_at, lease_version, done_at, position, kind)
      SELECT t.id, 's' || g, true, to_jsonb(g), NULL, 1, now(), g, 'step' FROM leasehold.task AS t, generate_series(0, 8) AS g
      UNION ALL
      SELECT t.id, 'nap', false, NULL, t.available_at, 1, NULL, 9, 'sleep' FROM leasehold.task AS t`.execute(t.db);
    await sql`ANALYZE leasehold.task`.execute(t.db);
    await sql`ANALYZE leasehold.task_step`.execute(t.db);

    const statement = await recordStatement((recorder) => leaseClaim(recorder, table, { owner: 'explain', batch: BATCH, leaseMs: 60_000 }));
    for (const plan of PLAN_KINDS) {
      const reads = await statementPlanReads(t.pool, 'task_step', statement, plan);
      // ten records per due run, read once for the rows and once to close the sleep
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * 10 * BATCH + BATCH);
      const parked = await statementPlanReads(t.pool, table.table, statement, plan);
      expect(parked.rowsTouched, parked.plan).toBeLessThanOrEqual(4 * BATCH);
    }

    const { claimed } = await leaseClaim(t.pool, table, { owner: 'test', batch: BATCH, leaseMs: 60_000 });
    expect(claimed).toHaveLength(BATCH);
    for (const run of claimed) {
      const records = claimedRecords.get(run);
      expect(records?.size).toBe(10);
      expect(records?.get('s3')).toEqual({ done: true, result: 3, position: 3, kind: 'step' });
      expect(records?.get('nap')).toMatchObject({ done: true, kind: 'sleep' });
    }
    const { rows } = await sql<{ closed: number; open: number }>`
      SELECT count(*) FILTER (WHERE done)::int AS closed, count(*) FILTER (WHERE NOT done)::int AS open
      FROM leasehold.task_step WHERE name = 'nap'`.execute(t.db);
    expect(rows[0]).toEqual({ closed: BATCH, open: 50_000 - BATCH });
  });

  it('50,000 tasks scheduled for later: the claim reads none of them', async () => {
    const later = defineTask<{ n: number }>('later', { handler: () => {} });
    await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
    await enqueueMany(t.pool, later, Array.from({ length: 50_000 }, (_, n) => ({ payload: { n }, delay: '1h' })));
    await enqueueMany(t.pool, later, Array.from({ length: 10 }, (_, n) => ({ payload: { n } })));
    await sql`ANALYZE leasehold.task`.execute(t.db);
    for (const plan of PLAN_KINDS) {
      const reads = await claimPlanReads(t.pool, table, BATCH, undefined, undefined, plan);
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(4 * BATCH);
    }
    const claimed = await claim(t.pool, { owner: 'test', batch: BATCH, lease: '1m' });
    expect(claimed).toHaveLength(10);
  });

  it('100,000 distinct groups in one enqueueMany on default server settings, while another producer holds 10,000', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
    const { rows } = await sql<{ setting: string }>`SELECT setting FROM pg_settings WHERE name = 'max_locks_per_transaction'`.execute(t.db);
    expect(Number(rows[0]?.setting)).toBeLessThanOrEqual(64); // the default: the old advisory locks ran out here
    const holder = await t.client();
    await holder.query('BEGIN');
    await enqueueMany(holder, sync, Array.from({ length: 10_000 }, (_, i) => ({ payload: { n: i }, groupKey: `held-${i}` })));
    // meanwhile, a batch of 5,000 other groups and one of 100,000 go through
    await enqueueMany(t.pool, sync, Array.from({ length: 5_000 }, (_, i) => ({ payload: { n: i }, groupKey: `five-${i}` })));
    const many = await enqueueMany(t.pool, sync, Array.from({ length: 100_000 }, (_, i) => ({ payload: { n: i }, groupKey: `g-${i}` })));
    expect(new Set(many.map((r) => r.id)).size).toBe(100_000);
    await holder.query('COMMIT');
    const counts = await statusCounts();
    // every group has one task, so each is its group's head
    expect(counts).toEqual({ pending: 115_000 });
  });

  it('16 concurrent enqueueMany calls sharing dedup keys in shuffled orders neither deadlock nor duplicate', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
    const once = defineTask<{ key: string }>('once', { handler: () => {} });
    const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`);
    const shuffled = () => [...keys].sort(() => Math.random() - 0.5);
    const orders = Array.from({ length: 16 }, shuffled);
    const calls = await Promise.allSettled(
      orders.map((order) =>
        t.db.transaction().execute((trx) => enqueueMany(trx, once, order.map((key) => ({ payload: { key }, dedupKey: key })))),
      ),
    );
    const failures = calls.flatMap((c) => (c.status === 'rejected' ? [String(c.reason)] : []));
    expect(failures).toEqual([]);
    const { rows } = await sql<{ id: string; dedup_key: string }>`
      SELECT id::text, dedup_key FROM leasehold.task WHERE name = 'once'`.execute(t.db);
    const stored = new Map(rows.map((r) => [r.dedup_key, r.id]));
    expect(stored.size).toBe(300);
    expect(rows).toHaveLength(300);
    // every call was answered, per key, with that key's one task; exactly one call inserted it
    const inserts = new Map<string, number>();
    calls.forEach((c, k) => {
      if (c.status !== 'fulfilled') return;
      c.value.forEach((r, i) => {
        const key = orders[k]![i]!;
        expect(r.id, key).toBe(stored.get(key));
        if (r.inserted) inserts.set(key, (inserts.get(key) ?? 0) + 1);
      });
    });
    expect([...inserts.values()].every((n) => n === 1) && inserts.size === 300).toBe(true);
  });
});
