// The stats cost what they return, not what the table holds: a small table is
// read once and counted exactly; in a large one the unfinished and dead rows are read from their
// partial indexes and the finished rows estimated from a sample of about 150 pages. Counting
// every row read 1,000,000 done rows for a few thousand live ones (0.4–0.7 s, issue 36). The
// sample is one page in each of 150 equal runs of the table's pages.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, leaseQueueStats, leaseStats, taskTable, type Executor } from '@leasehold/core';
import { statementPlanReads, type RecordedStatement } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const LIVE = 2_000;
const SAMPLE_PAGES = 150;

const noop = defineTask<{ n: number }>('stats-scale', { handler: () => {} });

/** `finished` done rows (a tenth of them cancelled), beside LIVE unfinished ones (half expired leases), 10 waiting and 5 dead. */
async function history(finished: number): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group RESTART IDENTITY`.execute(t.db);
  await sql`INSERT INTO leasehold.task (name, payload, status, attempts, done_at)
            SELECT 'stats-scale', '{}', CASE WHEN g % 10 = 0 THEN 'cancelled' ELSE 'done' END, 1, now()
            FROM generate_series(1, ${finished}::int) AS g`.execute(t.db);
  await enqueueMany(t.pool, noop, Array.from({ length: LIVE }, (_, n) => ({ payload: { n } })));
  await sql`UPDATE leasehold.task SET status = 'processing', attempts = 1, lease_version = 1, lease_until = now() - interval '1 minute'
            WHERE id IN (SELECT id FROM leasehold.task WHERE status = 'pending' ORDER BY id LIMIT ${LIVE / 2})`.execute(t.db);
  await sql`INSERT INTO leasehold.task (name, status, wait_for) SELECT 'stats-scale', 'waiting', 'signal:x' FROM generate_series(1, 10)`.execute(t.db);
  await sql`INSERT INTO leasehold.task (name, status, attempts) SELECT 'stats-scale', 'dead', 12 FROM generate_series(1, 5)`.execute(t.db);
  await sql`VACUUM ANALYZE leasehold.task`.execute(t.db);
}

/**
 * The statement `send` runs after the table's size is read: the size statement goes to the
 * database (it decides which statement follows), the one after it is recorded and answered
 * with no rows.
 */
async function statsStatement(send: (executor: Executor) => Promise<unknown>): Promise<RecordedStatement> {
  let statement: RecordedStatement | undefined;
  await send({
    query: async (arg: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      const text = typeof arg === 'string' ? arg : arg.text;
      const params = (typeof arg === 'string' ? values : arg.values) ?? [];
      if (text.includes('pg_relation_size')) return t.pool.query(text, params);
      statement ??= { text, values: params };
      return { rows: [], rowCount: 0 };
    },
  } as unknown as Executor).catch(() => undefined);
  if (statement === undefined) throw new Error('nothing was sent after the size');
  return statement;
}

describe('leaseStats and leaseQueueStats at production sizes', () => {
  it('count a small table exactly, reading it once', async () => {
    const finished = 10_000;
    await history(finished);
    const reads = await statementPlanReads(t.pool, table.table, await statsStatement((e) => leaseStats(e, table)));
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(finished + 2 * LIVE + 100);
    expect(await leaseStats(t.pool, table)).toMatchObject({
      counts: { pending: LIVE / 2, processing: LIVE / 2, done: finished * 0.9, cancelled: finished / 10, waiting: 10, dead: 5 },
      expiredLeases: LIVE / 2,
      attempts: [{ attempts: 0, count: LIVE / 2 }, { attempts: 1, count: LIVE / 2 }],
      estimated: false,
    });
    expect(await leaseQueueStats(t.pool, table)).toEqual([
      { name: 'stats-scale', pending: LIVE / 2, blocked: 0, processing: LIVE / 2, done: finished * 0.9, dead: 5, oldestPendingAgeMs: expect.any(Number), expiredLeases: LIVE / 2, estimated: false },
    ]);
  });

  it('read a sample of a large table, not every finished row, and count its live rows exactly', async () => {
    const finished = 400_000;
    await history(finished);
    const { rows } = await sql<{ per_page: number }>`
      SELECT reltuples / relpages AS per_page FROM pg_class WHERE oid = 'leasehold.task'::regclass`.execute(t.db);
    // the sampled pages' rows (150 pages; twice the average page's rows leaves room for pages
    // that hold more) and the live rows from their indexes
    const bound = 2 * SAMPLE_PAGES * rows[0]!.per_page + 4 * LIVE;
    expect(bound).toBeLessThan(finished / 2);
    for (const send of [(e: Executor) => leaseStats(e, table), (e: Executor) => leaseQueueStats(e, table)]) {
      const reads = await statementPlanReads(t.pool, table.table, await statsStatement(send));
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(bound);
    }
    const stats = await leaseStats(t.pool, table);
    expect(stats).toMatchObject({
      counts: { pending: LIVE / 2, processing: LIVE / 2, waiting: 10, dead: 5 },
      expiredLeases: LIVE / 2,
      attempts: [{ attempts: 0, count: LIVE / 2 }, { attempts: 1, count: LIVE / 2 }],
      estimated: true,
    });
    // an estimate: within 5 % of the truth. Rows spread evenly over the pages, as here, come out
    // within some 0.1 % (300 calls: at most 0.5 % off); a sample of pages each taken with the
    // same probability (TABLESAMPLE SYSTEM) read a varying number of pages and was 8 % off at one
    // standard deviation, 29 % at worst
    expect(Math.abs(stats.counts.done - finished * 0.9)).toBeLessThan(finished * 0.9 * 0.05);
    expect(Math.abs((stats.counts.cancelled ?? 0) - finished / 10)).toBeLessThan((finished / 10) * 0.05);
    const [queue] = await leaseQueueStats(t.pool, table);
    expect(queue).toMatchObject({ name: 'stats-scale', pending: LIVE / 2, processing: LIVE / 2, dead: 5, expiredLeases: LIVE / 2, estimated: true });
    expect(Math.abs(queue!.done - finished * 0.9)).toBeLessThan(finished * 0.9 * 0.05);
  });
});
