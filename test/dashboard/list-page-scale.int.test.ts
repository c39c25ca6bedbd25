// A page of the dashboard's list costs what it shows, not how many rows the table keeps: with
// statistics taken while every row was still pending, a page of done rows read every done row of
// the table (all of `task_done_at`, then sorted by id), however far past the list's id window;
// and a page of processing rows that found fewer than it shows (the last one) walked the primary
// key down through every older row, the finished history included. The table is larger than the
// list's id window (SCAN_WINDOW, 100,000 ids): within it, a page may read the whole window.
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { leasedListPage, SCAN_WINDOW, type ListPage } from '@leasehold/dashboard';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const DONE = 180_000; // the oldest ids
const LIVE = 20_000; // the newest: one in four processing, the rest pending
const PROCESSING = LIVE / 4;
const LIMIT = 50;
// a page's rows and the one that says there is more, read by up to three processes (a parallel scan)
const PAGE_READS = 3 * (LIMIT + 1);

const job = defineTask<{ n: number }>('list-scale', { handler: () => {} });

interface Ids {
  readonly floor: string;
  readonly top: string;
  /** Newest first. */
  readonly done: string[];
  readonly processing: string[];
}

/** 180,000 finished tasks, then 20,000 live ones: 5,000 processing among 15,000 pending. */
async function history(stats: 'current' | 'stale'): Promise<Ids> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
  // this file's own database: no autovacuum ANALYZE may refresh the stale statistics mid-test
  await sql`ALTER TABLE leasehold.task SET (autovacuum_enabled = false)`.execute(t.db);
  // the history as enqueueMany writes pending rows (a million would take minutes through it)
  await sql`INSERT INTO leasehold.task (name, payload) SELECT 'list-scale', jsonb_build_object('n', g) FROM generate_series(1, ${DONE}) AS g`.execute(t.db);
  for (let from = 0; from < LIVE; from += 10_000) {
    await enqueueMany(t.pool, job, Array.from({ length: 10_000 }, (_, i) => ({ payload: { n: DONE + from + i } })));
  }
  // stale: taken while every row was still pending, as between two ANALYZE runs of a busy table
  if (stats === 'stale') await sql`ANALYZE leasehold.task`.execute(t.db);
  const { rows: [bounds] } = await sql<{ min: string; max: string }>`SELECT min(id)::text AS min, max(id)::text AS max FROM leasehold.task`.execute(t.db);
  const firstLive = String(BigInt(bounds!.min) + BigInt(DONE));
  await sql`UPDATE leasehold.task SET status = 'done', attempts = 1, done_at = now() WHERE id < ${firstLive}::bigint`.execute(t.db);
  await sql`UPDATE leasehold.task SET status = 'processing', attempts = 1, lease_version = 1, lease_owner = 'w', lease_until = now() + interval '5 minutes'
            WHERE id >= ${firstLive}::bigint AND (id - ${firstLive}::bigint) % 4 = 0`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
  const ids = async (status: string) =>
    (await sql<{ id: string }>`SELECT t.id::text AS id FROM leasehold.task AS t WHERE t.status = ${status} ORDER BY t.id DESC`.execute(t.db)).rows.map((r) => r.id);
  return { floor: bounds!.min, top: String(BigInt(bounds!.max) + 1n), done: await ids('done'), processing: await ids('processing') };
}

/** One page, and the rows its statement read of the task table. */
async function page(status: 'done' | 'processing', ids: Ids, below: string): Promise<{ page: ListPage; read: number; plan: string }> {
  const filter = { status, name: null, groupKey: null };
  const range = { below, floor: ids.floor, limit: LIMIT };
  const statement = await recordStatement((executor) => leasedListPage(executor, table, filter, range));
  const reads = await statementPlanReads(t.pool, table.table, statement);
  return { page: await leasedListPage(t.pool, table, filter, range), read: reads.rowsTouched, plan: reads.plan };
}

describe.each(['current', 'stale'] as const)('list pages beside 180,000 finished rows (%s statistics)', (stats) => {
  let ids: Ids;
  beforeAll(async () => {
    ids = await history(stats);
    expect(BigInt(ids.top) - BigInt(ids.floor)).toBeGreaterThan(SCAN_WINDOW);
  });

  it('a page of done rows reads about that page', async () => {
    // the first page walks down past the live rows, as its window allows
    const first = await page('done', ids, ids.top);
    expect(first.page.rows.map((r) => r.id)).toEqual(ids.done.slice(0, LIMIT));
    expect(first.read, first.plan).toBeLessThanOrEqual(LIVE + PAGE_READS);
    // the next one starts among done rows; through task_done_at it read all 180,000
    const second = await page('done', ids, first.page.next!);
    expect(second.page.rows.map((r) => r.id)).toEqual(ids.done.slice(LIMIT, 2 * LIMIT));
    expect(second.page.rows.every((r) => r.status === 'done')).toBe(true);
    expect(second.page.next).toBe(ids.done[2 * LIMIT - 1]);
    expect(second.read, second.plan).toBeLessThanOrEqual(PAGE_READS);
  });

  it(`every page of the ${PROCESSING} processing rows reads those rows, never the finished ones`, async () => {
    const seen: string[] = [];
    let below: string | null = ids.top;
    for (let pages = 0; below !== null; pages++) {
      expect(pages, 'the pages end').toBeLessThan(PROCESSING / LIMIT + 2);
      const p = await page('processing', ids, below);
      expect(p.page.rows.every((r) => r.status === 'processing' && r.leaseOwner === 'w')).toBe(true);
      seen.push(...p.page.rows.map((r) => r.id));
      // the rows in flight (no index keeps processing rows in id order) and the page's own;
      // along the primary key, the last page (fewer rows than it shows) read all 180,000 done ones
      expect(p.read, p.plan).toBeLessThanOrEqual(PROCESSING + PAGE_READS);
      below = p.page.next;
    }
    expect(seen).toEqual(ids.processing);
  });
});
