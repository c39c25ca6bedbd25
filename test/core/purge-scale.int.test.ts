// A batch of the done-row purge costs its batch, not the backlog: with statistics taken while the
// table was empty, a batch read every done row older than the cutoff and sorted them all to
// delete the oldest 1,000 (766,000 rows read per batch with 1,000,000 done rows), so purging a
// backlog cost its square.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { leasePurgeDone, taskTable } from '@leasehold/core';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const DONE = 200_000;
const OLD = 150_000; // of the done rows, finished before the cutoff
const PENDING = 10_000;
const LIMIT = 1_000;
const DAY_MS = 86_400_000;
const OLDER_THAN_MS = 7 * DAY_MS;

/**
 * 200,000 done rows (the oldest 150,000 finished more than 7 days ago), beside 10,000 pending
 * rows and a few dead and cancelled ones older than any of them.
 */
async function doneHistory(stats: 'empty' | 'current'): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group RESTART IDENTITY`.execute(t.db);
  // this file's own database: no autovacuum ANALYZE may refresh the statistics mid-test
  await sql`ALTER TABLE leasehold.task SET (autovacuum_enabled = false)`.execute(t.db);
  // empty: as a table gets them when it was analysed before its first busy hour
  if (stats === 'empty') await sql`ANALYZE leasehold.task`.execute(t.db);
  // a second apart, oldest first: the first OLD an hour or more past the cutoff, the rest within
  // the last day
  await sql`
    INSERT INTO leasehold.task (name, status, attempts, lease_version, done_at)
    SELECT 'history', 'done', 1, 1,
           CASE WHEN g <= ${OLD} THEN now() - ${OLDER_THAN_MS} * interval '1 millisecond' - interval '1 hour' - (${OLD} - g) * interval '1 second'
                ELSE now() - (${DONE} - g) * interval '1 second' - interval '1 minute' END
    FROM generate_series(1, ${DONE}) AS g
  `.execute(t.db);
  await sql`INSERT INTO leasehold.task (name) SELECT 'queued' FROM generate_series(1, ${PENDING})`.execute(t.db);
  await sql`
    INSERT INTO leasehold.task (name, status, attempts, done_at, last_error)
    SELECT 'ended', s, 1, now() - interval '30 days', 'x' FROM unnest(ARRAY['dead', 'cancelled']) AS s, generate_series(1, 10)
  `.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
}

async function count(where: ReturnType<typeof sql>): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE ${where}`.execute(t.db);
  return Number(rows[0]!.n);
}

describe('purging done rows beside a long backlog', () => {
  // empty first: an ANALYZE of the emptied table would keep the statistics an earlier case took
  it.each(['empty', 'current'] as const)(
    `a batch of ${LIMIT.toLocaleString('en')} with ${OLD.toLocaleString('en')} done rows past the cutoff reads about its batch (%s statistics)`,
    async (stats) => {
      await doneHistory(stats);
      const purge = await recordStatement((executor) => leasePurgeDone(executor, table, OLDER_THAN_MS, LIMIT));
      const reads = await statementPlanReads(t.pool, table.table, purge);
      // the batch's rows twice: walked from the oldest in the done-at index, then deleted by
      // primary key (2,000 here), with room for a plan that reads a few more; planned on a
      // constant limit with empty statistics, it read and sorted all 150,000 rows past the cutoff
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(3 * LIMIT);
    },
  );

  it('deletes the oldest done rows first, and only done rows past the cutoff', async () => {
    await doneHistory('current');
    const { rows } = await sql<{ id: string }>`
      SELECT id::text AS id FROM leasehold.task WHERE status = 'done' ORDER BY done_at LIMIT ${LIMIT}`.execute(t.db);
    const oldest = rows.map((r) => r.id);
    expect(await leasePurgeDone(t.pool, table, OLDER_THAN_MS, LIMIT)).toBe(LIMIT);
    expect(await count(sql`id = ANY(${oldest}::bigint[])`)).toBe(0);
    expect(await count(sql`status = 'done'`)).toBe(DONE - LIMIT);

    let deleted = LIMIT;
    for (let n = LIMIT; n === LIMIT; deleted += n) n = await leasePurgeDone(t.pool, table, OLDER_THAN_MS, LIMIT);
    expect(deleted).toBe(OLD);
    // the done rows younger than the cutoff, the queue and the dead and cancelled rows stay
    expect(await count(sql`status = 'done'`)).toBe(DONE - OLD);
    expect(await count(sql`status = 'done' AND done_at < now() - ${OLDER_THAN_MS} * interval '1 millisecond'`)).toBe(0);
    expect(await count(sql`status <> 'done'`)).toBe(PENDING + 20);
  });
});
