// `leaseStats` counts every row by status, so it reads the table; it reads it once. As four
// subqueries it scanned the table three times (the counts, the oldest wait, the attempts).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, leaseStats, taskTable } from '@leasehold/core';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const FINISHED = 100_000;
const LIVE = 2_000;

const noop = defineTask<{ n: number }>('stats-scale', { handler: () => {} });

describe('leaseStats at production sizes', () => {
  it(`reads the ${(FINISHED + LIVE).toLocaleString('en')} rows of the table once`, async () => {
    await sql`INSERT INTO leasehold.task (name, payload, status, attempts, done_at)
              SELECT 'stats-scale', '{}', 'done', 1, now() FROM generate_series(1, ${FINISHED}::int)`.execute(t.db);
    await enqueueMany(t.pool, noop, Array.from({ length: LIVE }, (_, n) => ({ payload: { n } })));
    await sql`UPDATE leasehold.task SET status = 'processing', attempts = 1, lease_version = 1, lease_until = now() - interval '1 minute'
              WHERE id IN (SELECT id FROM leasehold.task WHERE status = 'pending' ORDER BY id LIMIT ${LIVE / 2})`.execute(t.db);
    await sql`ANALYZE leasehold.task`.execute(t.db);
    const stats = await recordStatement((executor) => leaseStats(executor, table).catch(() => undefined));
    const reads = await statementPlanReads(t.pool, table.table, stats);
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(FINISHED + 2 * LIVE);
    expect(await leaseStats(t.pool, table)).toMatchObject({
      counts: { pending: LIVE / 2, processing: LIVE / 2, done: FINISHED, dead: 0 },
      expiredLeases: LIVE / 2,
      attempts: [{ attempts: 0, count: LIVE / 2 }, { attempts: 1, count: LIVE / 2 }],
    });
  });
});
