// The overview's figures (issue 33): read from the unfinished rows' indexes up to caps, so that a
// refresh costs the same beside 10,000,000 finished rows as beside none. Below the caps every
// figure is exact; at a cap the page says "N+" (at least N); the done total of a large table is
// PostgreSQL's estimate and marked "≈". Small caps stand in for the real ones here.
import { taskTable, type LeasedTable } from '@leasehold/core';
import { startDashboard, type RunningDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { overviewQueueCounts, type OverviewQueue } from '../../packages/dashboard/src/sql/overview-queue-counts.js';
import { overviewTableFacts } from '../../packages/dashboard/src/sql/overview-table-facts.js';
import { overviewPage } from '../../packages/dashboard/src/views/overview.js';
import type { PageContext } from '../../packages/dashboard/src/views/page-context.js';
import { insertTasks, useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable() as LeasedTable<unknown>;
let dashboard: RunningDashboard;

const exact = (n: number) => ({ n, atLeast: false });
const atLeast = (n: number) => ({ n, atLeast: true });

beforeAll(async () => {
  // oc.mail: 7 pending (2 of them blocked behind their group's head), 3 dead, 2 running (one
  // lease expired), 4 done; oc.flow: 2 parked workflow runs, 1 pending scheduled for later
  await insertTasks(t.db, 4, { name: 'oc.mail' });
  await insertTasks(t.db, 3, { name: 'oc.mail', groupKey: 'oc-group' });
  await insertTasks(t.db, 3, { name: 'oc.mail', status: 'dead', attempts: 12 });
  await insertTasks(t.db, 1, { name: 'oc.mail', status: 'processing', attempts: 1, leaseUntilOffsetMs: -60_000 });
  await insertTasks(t.db, 1, { name: 'oc.mail', status: 'processing', attempts: 1, leaseUntilOffsetMs: 60_000 });
  await insertTasks(t.db, 4, { name: 'oc.mail', status: 'done', attempts: 1 });
  const parked = await insertTasks(t.db, 2, { name: 'oc.flow', attempts: 1 });
  await sql`UPDATE leasehold.task SET status = 'waiting', wait_for = 'children' WHERE id = ANY(${parked}::bigint[])`.execute(t.db);
  await insertTasks(t.db, 1, { name: 'oc.flow', availableOffsetMs: 3_600_000 });
  // the oldest waiting row of oc.mail: created (and due) ten minutes ago
  await sql`UPDATE leasehold.task SET created_at = now() - interval '10 minutes', available_at = now() - interval '10 minutes'
            WHERE id = (SELECT min(id) FROM leasehold.task WHERE name = 'oc.mail')`.execute(t.db);
  dashboard = await startDashboard({ database: t.pool, port: 0 });
});

afterAll(async () => {
  await dashboard?.close();
});

const byName = (queues: readonly OverviewQueue[], name: string) => queues.find((q) => q.name === name);

describe("the overview's figures", () => {
  it('are exact below the caps', async () => {
    const facts = await overviewTableFacts(t.pool, table);
    expect(facts).toEqual({ byName: true, done: { kind: 'counted', n: 4 } });
    const counts = await overviewQueueCounts(t.pool, table, true);
    expect(counts.countCap).toBe(10_000); // two names: the largest step the budget allows
    expect(counts.namesCut).toBe(false);
    const mail = byName(counts.queues, 'oc.mail')!;
    expect(mail).toMatchObject({
      dead: exact(3), pending: exact(7), blocked: exact(2), processing: exact(2), expiredLeases: exact(1), waiting: exact(0), oldestAtLeast: false,
    });
    expect(mail.oldestPendingAgeMs).toBeGreaterThanOrEqual(600_000 - 1_000);
    expect(mail.oldestPendingAgeMs).toBeLessThan(3_600_000);
    // scheduled for later: pending, but not waiting yet
    expect(byName(counts.queues, 'oc.flow')).toMatchObject({ pending: exact(1), waiting: exact(2), dead: exact(0), oldestPendingAgeMs: null });
  });

  it('stop at a cap and say so', async () => {
    const counts = await overviewQueueCounts(t.pool, table, true, { countCap: 2, readCap: 1 });
    expect(counts).toMatchObject({ countCap: 2, readCap: 1 });
    const mail = byName(counts.queues, 'oc.mail')!;
    expect(mail).toMatchObject({ dead: atLeast(2), pending: atLeast(2), waiting: exact(0) });
    // two leases, one read (and the one after it, which tells there are more): the expired one
    // comes first, by deadline, and the one after it has not expired, so every expired lease was
    // read and their count is exact
    expect(mail.processing).toEqual(atLeast(2));
    expect(mail.expiredLeases).toEqual(exact(1));
    expect(mail.blocked).toEqual(atLeast(2));
    expect(byName(counts.queues, 'oc.flow')).toMatchObject({ pending: exact(1), waiting: exact(2) }); // at the cap, not past it
  });

  it('reads a table without the name index (the outbox) whole up to the cap', async () => {
    const counts = await overviewQueueCounts(t.pool, table, false);
    expect(byName(counts.queues, 'oc.mail')).toMatchObject({ dead: exact(3), pending: exact(7), blocked: exact(2), processing: exact(2), expiredLeases: exact(1) });
    // 3 of the 5 ready rows (the cap and one more) and both blocked ones; 3 of the 3 dead rows
    // (the read cannot tell there are no more)
    const capped = await overviewQueueCounts(t.pool, table, false, { readCap: 2 });
    expect(byName(capped.queues, 'oc.mail')).toMatchObject({ dead: atLeast(3), pending: atLeast(5) });
  });

  it('estimate the done total of a large table, from the statistics', async () => {
    await sql`ANALYZE leasehold.task`.execute(t.db);
    // a "large" table for the test: one past 0 pages
    const facts = await overviewTableFacts(t.pool, table, 0);
    expect(facts.done.kind).toBe('estimated');
    if (facts.done.kind !== 'estimated') return;
    expect(facts.done.n).toBe(4); // ANALYZE read every row of so small a table
    expect(facts.done.analysedAt).toBeInstanceOf(Date);
  });
});

describe('the overview page', () => {
  it('shows the exact figures, and the done total counted', async () => {
    const html = await (await fetch(dashboard.url)).text();
    const row = /<th scope="row"><a href="[^"]*">oc\.mail<\/a><\/th>([\s\S]*?)<\/tr>/.exec(html)?.[1] ?? '';
    const cells = [...row.matchAll(/<td class="num">([\s\S]*?)<\/td>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ''));
    // dead, pending, oldest pending, processing, expired leases, blocked, waiting, done last hour
    expect(cells.slice(0, 8)).toEqual(['3', '7', expect.stringMatching(/^10 min/), '2', '1', '2', '0', '0']);
    expect(html).toContain('Done in all: <span class="count">4</span>');
    expect(html).not.toContain('≈');
    expect(html).not.toContain('counting-note');
  });

  it('marks capped counts "N+", a lower-bound age "≥" and an estimated total "≈"', async () => {
    const counts = await overviewQueueCounts(t.pool, table, true, { countCap: 2, readCap: 1 });
    const ctx: PageContext = { base: '', readOnly: false, csrf: 'x', schema: 'leasehold', pageSize: 50, tables: { task: true, outbox: false, schedule: false, limit: true } };
    const queues = counts.queues.map((q) => (q.name === 'oc.mail' ? { ...q, oldestAtLeast: true } : q));
    const html = String(
      overviewPage(ctx, {
        tables: [{ kind: 'task', counts: { ...counts, queues }, done: { kind: 'estimated', n: 9_280_000, analysedAt: new Date('2026-12-05T02:00:00Z') }, throughput: [] }],
        at: new Date(),
        refreshIntervalMs: 5_000,
        slowMs: null,
      }),
    );
    expect(html).toContain('>2+</span>');
    expect(html).toContain('title="At least 2: counting stopped here"');
    expect(html).toContain('≥ 10 min');
    expect(html).toContain(`≈ 9,280,000</span> (estimated from PostgreSQL's statistics of <time datetime="2026-12-05T02:00:00.000Z">`);
    expect(html).toContain('&quot;N+&quot; means at least N (dead, pending and waiting are counted up to 2 per row; running and blocked rows are read up to 1 per table)');
  });
});
