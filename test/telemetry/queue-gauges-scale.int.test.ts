// The queue gauges are read every interval in every process that reports them. Counting every
// row, as `leasehold stats` does, read the finished rows too: 1,000,000 done rows for 20,000
// pending ones took 260 ms per read here. After the first read they read only what is queued.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createQueueMetrics, leaseQueueStats, taskTable } from '@leasehold/core';
import { leaseLiveQueueStats } from '@leasehold/core/internal';
import { createOutbox, outboxTable } from '@leasehold/outbox';
import { statementPlanReads, type RecordedStatement } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';
import { registerMetrics, type Collected } from './otel-sdk.js';

const metrics = registerMetrics();
const t = useTestDatabase();
const table = taskTable();
const FINISHED = 100_000;

const attrs = (name: string) => ({ 'messaging.system': 'leasehold', 'messaging.destination.name': name, 'leasehold.table': 'leasehold.task' });
/** The gauge's value for `name`, or undefined when the series is absent (Collected.value reads 0 then). */
const series = (g: Collected, gauge: string, name: string) =>
  (g.metric(gauge)?.dataPoints.find((p) => p.attributes['messaging.destination.name'] === name)?.value as number | undefined);

/** Every kind of unfinished row the claim's indexes hold, and dead ones, beside many finished rows. */
async function fill(): Promise<number> {
  const rows = (n: number, columns: string, values: string) =>
    sql.raw(`INSERT INTO leasehold.task (name, payload, ${columns}) SELECT 'g-mixed', '{}', ${values} FROM generate_series(1, ${n})`).execute(t.db);
  await sql`INSERT INTO leasehold.task (name, payload, status, attempts, done_at)
            SELECT CASE WHEN n % 2 = 0 THEN 'g-done-only' ELSE 'g-mixed' END, '{}', 'done', 1, now()
            FROM generate_series(1, ${FINISHED}::int) AS n`.execute(t.db);
  await rows(300, 'status', `'pending'`);
  await rows(200, 'status, scheduled, available_at', `'pending', true, now() + interval '1 hour'`);
  await rows(100, 'status, scheduled, available_at', `'pending', true, now() - interval '1 minute'`);
  await rows(50, 'status, blocked, group_key', `'pending', true, 'g'`);
  await rows(40, 'status, flow, flow_key', `'pending', 'g-limit', ''`);
  await rows(30, 'status, flow, flow_key, scheduled, available_at', `'pending', 'g-limit', '', true, now() + interval '1 hour'`);
  await rows(80, 'status, attempts, lease_version, lease_until', `'processing', 1, 1, now() - interval '1 minute'`);
  await rows(20, 'status, attempts, lease_version, lease_until', `'processing', 1, 1, now() + interval '1 minute'`);
  await rows(60, 'status, attempts', `'dead', 3`);
  await sql`INSERT INTO leasehold.task (name, payload) SELECT 'g-drains', '{}' FROM generate_series(1, 10)`.execute(t.db);
  return 300 + 200 + 100 + 50 + 40 + 30 + 80 + 20 + 60 + 10;
}

describe('queue gauges at production sizes', () => {
  for (const stats of ['from an empty table', 'current'] as const) {
    it(`read only the unfinished and dead rows beside ${FINISHED.toLocaleString('en')} done ones, with statistics ${stats}`, async () => {
      await sql`TRUNCATE leasehold.task`.execute(t.db);
      if (stats === 'from an empty table') await sql`ANALYZE leasehold.task`.execute(t.db);
      const live = await fill();
      if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);

      // what the poller sends: every statement on a pool that passes them on
      const sent: RecordedStatement[] = [];
      const pool = {
        query: (arg: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
          sent.push(typeof arg === 'string' ? { text: arg, values: values ?? [] } : { text: arg.text, values: arg.values ?? [] });
          return t.pool.query(arg as string, values);
        },
      };
      const gauges = createQueueMetrics({ pool, interval: '20ms', logger: null });
      try {
        await gauges.start();
        const first = await metrics.collect();
        // the first read counts every row: a queue whose rows all finished has its series
        expect(series(first, 'leasehold.queue.pending', 'g-done-only')).toBe(0);
        expect(first.value('leasehold.queue.pending', attrs('g-drains'))).toBe(10);

        await sql`UPDATE leasehold.task SET status = 'done', done_at = now() WHERE name = 'g-drains'`.execute(t.db);
        const after = sent.length;
        const deadline = Date.now() + 30_000;
        let later = await metrics.collect();
        while (series(later, 'leasehold.queue.pending', 'g-drains') !== 0 || sent.length <= after + 1) {
          if (Date.now() > deadline) throw new Error('the gauges were not read again within 30 s');
          await new Promise((r) => setTimeout(r, 20));
          later = await metrics.collect();
        }
        // a queue that emptied reports 0s, as does one that had only finished rows
        expect(series(later, 'leasehold.queue.pending', 'g-drains')).toBe(0);
        expect(series(later, 'leasehold.queue.pending', 'g-done-only')).toBe(0);
        expect(series(later, 'leasehold.queue.dead', 'g-done-only')).toBe(0);

        const reads = await statementPlanReads(t.pool, table.table, sent.at(-1)!);
        expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * live);
        expect(reads.rowsTouched, reads.plan).toBeGreaterThanOrEqual(live - 10);
      } finally {
        gauges.stop();
      }

      // the same figures as the count of every row, `done` aside
      const everyRow = (await leaseQueueStats(t.pool, table)).filter((q) => q.pending + q.processing + q.dead > 0);
      expect(await leaseLiveQueueStats(t.pool, table)).toEqual(everyRow.map(({ done: _done, estimated: _estimated, ...q }) => ({ ...q, oldestPendingAgeMs: expect.any(Number) })));
      expect(everyRow.map((q) => [q.name, q.pending, q.blocked, q.processing, q.dead, q.expiredLeases])).toEqual([['g-mixed', 720, 50, 100, 60, 80]]);
    });
  }

  it('read the outbox table (no limits) the same way', async () => {
    const outbox = createOutbox();
    for (let i = 0; i < 5; i++) await outbox.add(t.pool, { aggregateType: 'order', aggregateId: i % 2, eventType: 'g-placed', payload: { i } });
    await sql`UPDATE leasehold.outbox SET status = 'dead' WHERE id = (SELECT min(id) FROM leasehold.outbox)`.execute(t.db);
    // two waiting behind an earlier row of their group, and one scheduled for later
    await sql`UPDATE leasehold.outbox SET blocked = true WHERE id IN (SELECT id FROM leasehold.outbox WHERE status = 'pending' ORDER BY id DESC LIMIT 2)`.execute(t.db);
    await sql`UPDATE leasehold.outbox SET scheduled = true, available_at = now() + interval '1 hour'
              WHERE id = (SELECT min(id) FROM leasehold.outbox WHERE status = 'pending')`.execute(t.db);
    const everyRow = await leaseQueueStats(t.pool, outboxTable());
    expect(everyRow.map((q) => [q.name, q.pending, q.blocked, q.dead])).toEqual([['g-placed', 4, 2, 1]]);
    expect(await leaseLiveQueueStats(t.pool, outboxTable())).toEqual(everyRow.map(({ done: _done, estimated: _estimated, ...q }) => ({ ...q, oldestPendingAgeMs: expect.any(Number) })));
  });
});
