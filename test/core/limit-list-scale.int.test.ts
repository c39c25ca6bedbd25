// `limitList` (what `leasehold stats` shows of each limit) costs what it counts, not how many rows
// the table keeps: its count of a limit's waiting tasks matched no index and scanned the whole
// table, finished history included, and its check of the running leases could hash every
// processing row of the table.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineLimit, defineTask, enqueueMany, limitList } from '@leasehold/core';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const HISTORY = 100_000;
const OTHERS_IN_FLIGHT = 20_000;
const WAITING = 5_000;
const HOLDERS = 1_000;

// with a rate, so its slots are kept in its row's list (a limit of concurrency alone this large
// keeps them in stripes, counted from its processing rows: the last test)
const api = defineLimit('api', { concurrency: 2_000, rate: { limit: 10_000, period: '1s' } });
const call = defineTask<{ n: number }>('call-api', { limit: api, handler: () => {} });
const striped = defineLimit('api', { concurrency: 2_000 });
const callStriped = defineTask<{ n: number }>('call-api', { limit: striped, handler: () => {} });

/**
 * A limit with 5,000 waiting tasks and 1,000 running ones (its holders), beside 100,000 finished
 * tasks and 20,000 running ones of another type. `stats`: current, or taken while the rows that
 * now run were all pending.
 */
async function busyLimit(stats: 'current' | 'stale', task = call): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, leasehold.task_limit, leasehold.task_limit_stripe`.execute(t.db);
  // a worker records its limits at start
  const worker = createWorker({ pool: t.pool, tasks: [task], logger: null });
  await worker.start();
  await worker.stop();
  await sql`INSERT INTO leasehold.task (name, payload, status, done_at)
            SELECT 'other', '{}', 'done', now() FROM generate_series(1, ${HISTORY}::int)`.execute(t.db);
  await sql`INSERT INTO leasehold.task (name, payload)
            SELECT 'other', '{}' FROM generate_series(1, ${OTHERS_IN_FLIGHT}::int)`.execute(t.db);
  for (let from = 0; from < WAITING + HOLDERS; from += 3_000) {
    await enqueueMany(t.pool, call, Array.from({ length: 3_000 }, (_, i) => ({ payload: { n: from + i } })));
  }
  if (stats === 'stale') await sql`ANALYZE leasehold.task`.execute(t.db);
  // (and in a stripe, as a claim of a limit kept in stripes puts them)
  await sql`UPDATE leasehold.task SET status = 'processing', lease_version = 1, attempts = 1, lease_owner = 'w',
              lease_until = now() + interval '1 hour', flow_slot = CASE WHEN flow IS NULL THEN NULL ELSE id % 2 END
            WHERE name = 'other' AND status = 'pending'
               OR id IN (SELECT id FROM leasehold.task WHERE name = 'call-api' ORDER BY id LIMIT ${HOLDERS})`.execute(t.db);
  // the holders, as the claims that took them recorded them
  await sql`UPDATE leasehold.task_limit AS l
            SET holder_ids = h.ids, holder_versions = h.versions, holder_keys = h.keys
            FROM (SELECT array_agg(id ORDER BY id) AS ids, array_agg(lease_version ORDER BY id) AS versions,
                         array_agg(''::text ORDER BY id) AS keys
                  FROM leasehold.task WHERE name = 'call-api' AND status = 'processing') AS h
            WHERE l.name = 'api'`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
}

describe('limits listed at production sizes', () => {
  it.each(['current', 'stale'] as const)(
    `listing a limit with ${WAITING.toLocaleString('en')} waiting and ${HOLDERS.toLocaleString('en')} running tasks reads about those (%s statistics)`,
    async (stats) => {
      await busyLimit(stats);
      const list = await recordStatement((executor) => limitList(executor).catch(() => undefined));
      const reads = await statementPlanReads(t.pool, 'task', list);
      // the waiting ones through the limit's index, each holder by primary key (6,000 here),
      // with room for a plan that reads a few more; the count alone scanned all 126,000 rows
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * (WAITING + HOLDERS));
      const [row] = await limitList(t.pool);
      expect(row).toMatchObject({ name: 'api', running: HOLDERS, runningKeys: 1, waiting: WAITING });
    },
  );

  it('counts waiting tasks scheduled for later and blocked behind a group, and not a holder whose lease moved on', async () => {
    await busyLimit('current');
    // 10 of the waiting ones scheduled for later, 10 blocked in a group; one holder's token moved on
    await sql`UPDATE leasehold.task SET scheduled = true, available_at = now() + interval '1 hour'
              WHERE id IN (SELECT id FROM leasehold.task WHERE name = 'call-api' AND status = 'pending' ORDER BY id LIMIT 10)`.execute(t.db);
    await sql`UPDATE leasehold.task SET blocked = true, group_key = 'g'
              WHERE id IN (SELECT id FROM leasehold.task WHERE name = 'call-api' AND status = 'pending' AND NOT scheduled ORDER BY id LIMIT 10)`.execute(t.db);
    await sql`UPDATE leasehold.task SET lease_version = 2
              WHERE id = (SELECT min(id) FROM leasehold.task WHERE name = 'call-api' AND status = 'processing')`.execute(t.db);
    const [row] = await limitList(t.pool);
    expect(row).toMatchObject({ running: HOLDERS - 1, waiting: WAITING });
  });

  it('counts the running tasks of a limit kept in stripes from its processing rows, not an expired lease', async () => {
    await busyLimit('current', callStriped);
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second'
              WHERE id = (SELECT min(id) FROM leasehold.task WHERE name = 'call-api' AND status = 'processing')`.execute(t.db);
    const list = await recordStatement((executor) => limitList(executor).catch(() => undefined));
    const reads = await statementPlanReads(t.pool, 'task', list);
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * (WAITING + HOLDERS));
    const [row] = await limitList(t.pool);
    expect(row).toMatchObject({ name: 'api', concurrency: 2_000, running: HOLDERS - 1, runningKeys: 1, waiting: WAITING });
  });
});
