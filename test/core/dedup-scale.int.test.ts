// An enqueue with dedup keys costs what it enqueues, not how many live tasks the table holds:
// the statement reports, for each key already live, the task that holds it, and it used to join
// the whole table for that (all 50,000 live rows read for a batch of 500 keys).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const LIVE = 50_000;
const BATCH = 500;

const keyed = defineTask<{ n: number }>('dedup-scale', { handler: () => {} });

/** 50,000 live tasks with keys k0 … k49999. */
async function liveKeys(stats: 'current' | 'empty'): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
  // empty: as a table gets them when it was analysed before its first busy hour
  if (stats === 'empty') await sql`ANALYZE leasehold.task`.execute(t.db);
  for (let from = 0; from < LIVE; from += 5_000) {
    await enqueueMany(t.pool, keyed, Array.from({ length: 5_000 }, (_, i) => ({ payload: { n: from + i }, dedupKey: `k${from + i}` })));
  }
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
}

// half the keys live (k0, k4, k8, …), half new
const batch = Array.from({ length: BATCH }, (_, i) => ({ payload: { n: -i }, dedupKey: i % 2 === 0 ? `k${i * 2}` : `new${i}` }));

describe('dedup keys at production sizes', () => {
  it.each(['current', 'empty'] as const)(
    `a batch of ${BATCH} keys beside ${LIVE.toLocaleString('en')} live tasks reads only the live tasks it meets (%s statistics)`,
    async (stats) => {
      await liveKeys(stats);
      // the first statement is the insert (the recorder answers nothing, so the call then fails)
      const insert = await recordStatement((executor) => enqueueMany(executor, keyed, batch).catch(() => undefined));
      const reads = await statementPlanReads(t.pool, table.table, insert);
      // one lookup in the dedup index per key already live (250 here), with room for a plan
      // that reads a few more; joined, it read all 50,000
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * (BATCH / 2));
    },
  );

  it('answers each live key with the task that holds it and inserts the rest', async () => {
    await liveKeys('current');
    const result = await enqueueMany(t.pool, keyed, batch);
    const { rows } = await sql<{ id: string; key: string }>`
      SELECT id::text, dedup_key AS key FROM leasehold.task WHERE dedup_key = ANY(${batch.map((b) => b.dedupKey)}::text[])`.execute(t.db);
    const idByKey = new Map(rows.map((r) => [r.key, r.id]));
    expect(result.map((r) => r.inserted)).toEqual(batch.map((_, i) => i % 2 === 1));
    expect(result.map((r) => r.id)).toEqual(batch.map((b) => idByKey.get(b.dedupKey)));
    const count = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task`.execute(t.db);
    expect(Number(count.rows[0]!.n)).toBe(LIVE + BATCH / 2);
  });
});
