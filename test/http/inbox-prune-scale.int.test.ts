// Pruning the inbox costs what it deletes, not how many records it keeps: one DELETE per batch,
// its rows found through the received_at index. It used to be one unbounded DELETE on a
// comparison with now(), which under statistics taken before a backlog was pruned scanned all
// 1,000,000 retained records to prune 2,500, and at a catch-up deleted 200,000 in one statement.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createInbox } from '@leasehold/adapters-http';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const inbox = createInbox();
const BATCH = 1_000;
const RETENTION = '20d';

/**
 * `old` records received 40 days ago and `kept` received 10 days ago. Stale statistics: taken
 * while the table held a backlog of 100,000 records 60 days old, since pruned (and vacuumed), so
 * the planner believes nearly every record is past any retention.
 */
async function load(stats: 'current' | 'stale', old: number, kept: number): Promise<void> {
  await sql`TRUNCATE leasehold.inbox`.execute(t.db);
  // no analysis by autovacuum behind the test's back
  await sql`ALTER TABLE leasehold.inbox SET (autovacuum_enabled = false)`.execute(t.db);
  if (stats === 'stale') {
    await sql`
      INSERT INTO leasehold.inbox (message_id, received_at)
      SELECT 'backlog' || g, now() - interval '60 days' + g * interval '1 ms' FROM generate_series(1, 100000) AS g`.execute(t.db);
    await sql`ANALYZE leasehold.inbox`.execute(t.db);
    await sql`DELETE FROM leasehold.inbox`.execute(t.db);
    await sql`VACUUM leasehold.inbox`.execute(t.db);
  }
  await sql`
    INSERT INTO leasehold.inbox (message_id, received_at)
    SELECT 'old' || g, now() - interval '40 days' + g * interval '1 ms' FROM generate_series(1, ${old}::int) AS g
    UNION ALL
    SELECT 'kept' || g, now() - interval '10 days' + g * interval '1 ms' FROM generate_series(1, ${kept}::int) AS g`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.inbox`.execute(t.db);
}

/** What the first DELETE of a prune reads. */
async function firstBatchReads() {
  // the recorder answers no rows, so the prune stops after its first statement
  const statement = await recordStatement((executor) => inbox.prune(executor, { olderThan: RETENTION, batchSize: BATCH }));
  return statementPlanReads(t.pool, 'inbox', statement);
}

async function count(prefix: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.inbox WHERE message_id LIKE ${`${prefix}%`}`.execute(t.db);
  return Number(rows[0]!.n);
}

describe('inbox retention at production sizes', () => {
  it('a routine prune of 2,500 records beside 1,000,000 kept ones reads one batch per statement (stale statistics)', async () => {
    await load('stale', 2_500, 1_000_000);
    const reads = await firstBatchReads();
    // one batch in index order, then the same rows by primary key (2,000 reads); the unbounded
    // DELETE scanned all 1,002,500 records
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(3 * BATCH);
    expect(await inbox.prune(t.pool, { olderThan: RETENTION, batchSize: BATCH })).toBe(2_500);
    expect([await count('old'), await count('kept')]).toEqual([0, 1_000_000]);
  });

  it('a catch-up prune of 200,000 records deletes them batch by batch, each reading about what it deletes (current statistics)', async () => {
    await load('current', 200_000, 10_000);
    const reads = await firstBatchReads();
    // 2,000 reads again; the unbounded DELETE read all 210,000 records and deleted 200,000 in one
    // statement
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(3 * BATCH);
    expect(await inbox.prune(t.pool, { olderThan: RETENTION, batchSize: 50_000 })).toBe(200_000);
    expect([await count('old'), await count('kept')]).toEqual([0, 10_000]);
    // a pruned id is new again; a kept one is still a duplicate
    expect((await inbox.receive(t.pool, 'old7', async () => undefined)).applied).toBe(true);
    expect((await inbox.receive(t.pool, 'kept7', async () => undefined)).applied).toBe(false);
  });

  it('stops between batches when aborted, and refuses a bad batch size before any SQL', async () => {
    await load('current', 3_000, 0);
    const controller = new AbortController();
    const aborted = inbox.prune(
      { query: async (...args: unknown[]) => { controller.abort(); return t.pool.query(...(args as [string])); } },
      { olderThan: RETENTION, batchSize: BATCH, signal: controller.signal },
    );
    expect(await aborted).toBe(BATCH);
    expect(await count('old')).toBe(2_000);
    await expect(inbox.prune(t.pool, { olderThan: RETENTION, batchSize: 0 })).rejects.toThrow(/batchSize/);
  });
});
