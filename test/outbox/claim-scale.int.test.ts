// Issue 11 on the outbox, at the sizes that broke the old ordered claim: a long queue behind one
// aggregate (dead head, healthy head), and 100,000 aggregates in one addMany.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { PermanentError } from '@leasehold/core';
import { createDispatcher, createOutbox, type OutboxEvent, type Publisher } from '@leasehold/outbox';
import { claimPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { resetOutbox, waitUntil } from './helpers.js';

const t = useTestDatabase();
const track = useWorkers();
const outbox = createOutbox({ orderedEventTypes: ['OrderPaid'] });
const paid = (aggregateId: string, i: number): OutboxEvent => ({ aggregateType: 'order', aggregateId, eventType: 'OrderPaid', payload: { i } });

describe('the ordered outbox at production sizes', () => {
  it('50,000 messages behind a dead head and 20,000 behind a healthy one cost the claim nothing; 1,000 other aggregates are delivered', async () => {
    await resetOutbox(t.db);
    await outbox.add(t.pool, paid('stuck', -1));
    await outbox.addMany(t.pool, Array.from({ length: 50_000 }, (_, i) => paid('stuck', i)));
    await outbox.addMany(t.pool, Array.from({ length: 20_001 }, (_, i) => paid('busy', i)));
    await outbox.addMany(t.pool, Array.from({ length: 1_000 }, (_, i) => paid(`h${i}`, i)));
    await sql`ANALYZE leasehold.outbox`.execute(t.db);
    const reads = await claimPlanReads(t.pool, outbox.table, 50);
    expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(200);

    const delivered: { key: string; i: number }[] = [];
    const publisher: Publisher = {
      async publish(m) {
        if (m.key === 'stuck') throw new PermanentError('the receiver refuses this aggregate');
        delivered.push({ key: m.key, i: (m.payload as { i: number }).i });
      },
    };
    const d = track(createDispatcher({ pool: t.pool, publisher, concurrency: 8, pollInterval: '1s' }));
    await d.start();
    await waitUntil(() => delivered.filter((m) => m.key.startsWith('h')).length === 1_000, '1,000 healthy aggregates delivered', 60_000);
    await d.stop();
    // once the stuck head went dead, its claim plan is as small as ever
    const after = await claimPlanReads(t.pool, outbox.table, 50);
    expect(after.rowsTouched, after.plan).toBeLessThanOrEqual(200);
    const busy = delivered.filter((m) => m.key === 'busy').map((m) => m.i);
    expect(busy).toEqual(busy.map((_, i) => i));
    const { rows } = await sql<{ status: string; n: string }>`
      SELECT status, count(*) AS n FROM leasehold.outbox WHERE aggregate_id = 'stuck' GROUP BY status`.execute(t.db);
    expect(Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]))).toEqual({ dead: 1, pending: 50_000 });
  }, 120_000);

  it('100,000 aggregates in one addMany on default server settings', async () => {
    await resetOutbox(t.db);
    const ids = await outbox.addMany(t.pool, Array.from({ length: 100_000 }, (_, i) => paid(`a${i}`, i)));
    expect(new Set(ids).size).toBe(100_000);
    const { rows } = await sql<{ heads: string; groups: string }>`
      SELECT (SELECT count(*) FROM leasehold.outbox WHERE NOT blocked) AS heads,
             (SELECT count(*) FROM leasehold.outbox_group) AS groups`.execute(t.db);
    expect([Number(rows[0]?.heads), Number(rows[0]?.groups)]).toEqual([100_000, 100_000]);
  }, 120_000);
});
