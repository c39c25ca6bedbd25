// Operations on the outbox through the public API: stats (checked against direct SQL), the
// dead-letter listing, retryDead / skipDead, and the bounded retention purge.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claim, dispatchOnce, PermanentError, RetryableError } from '@leasehold/core';
import { createOutbox, toOutboxMessage, type OutboxEvent } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { readMessages, resetOutbox, waitUntil } from './helpers.js';

const t = useTestDatabase();
const outbox = createOutbox({ orderedEventTypes: ['OrderPaid'] });
const table = outbox.table;

const events = (eventType: string, n: number, aggregateId = 'a'): OutboxEvent[] =>
  Array.from({ length: n }, (_, i) => ({ aggregateType: 'order', aggregateId: `${aggregateId}${i}`, eventType, payload: { i } }));

/** Runs core's dispatchOnce on the outbox for one event type with a given publish outcome. */
async function dispatch(eventType: string, publish: () => void): Promise<void> {
  await dispatchOnce(t.pool, async (row) => {
    expect(toOutboxMessage(row).eventType).toBe(eventType);
    publish();
  }, {
    table, owner: 'ops-test', names: [eventType], backoff: { baseMs: 60_000, capMs: 60_000 },
  });
}

describe('stats', () => {
  it('is empty on an empty outbox', async () => {
    await resetOutbox(t.db);
    expect(await outbox.stats(t.pool)).toEqual({
      counts: { pending: 0, processing: 0, done: 0, dead: 0 }, oldestPendingAgeMs: null, expiredLeases: 0, attempts: [], estimated: false,
    });
  });

  it('after a scripted mix of done / retrying / dead / expired-lease / leased / new messages, matches direct SQL', async () => {
    await resetOutbox(t.db);
    await outbox.addMany(t.pool, events('Delivered', 3));
    await outbox.addMany(t.pool, events('Flaky', 2));
    await outbox.addMany(t.pool, events('Broken', 2));
    await outbox.addMany(t.pool, events('Crashed', 2));
    await outbox.addMany(t.pool, events('Leased', 1));
    await outbox.addMany(t.pool, events('New', 1));
    await dispatch('Delivered', () => undefined);
    await dispatch('Flaky', () => { throw new RetryableError('503'); });
    await dispatch('Broken', () => { throw new PermanentError('422'); });
    // a crashed dispatcher: claimed with a short lease, never finalized
    const crashed = await claim(t.pool, { table, owner: 'crashed', batch: 10, lease: 50, names: ['Crashed'] });
    await claim(t.pool, { table, owner: 'alive', batch: 10, lease: '10m', names: ['Leased'] });
    await waitUntil(async () => {
      const { rows } = await sql<{ n: string }>`
        SELECT count(*) AS n FROM leasehold.outbox WHERE id = ANY(${crashed.map((m) => m.id)}::bigint[]) AND lease_until < now()`.execute(t.db);
      return Number(rows[0]?.n) === 2;
    }, 'the crashed leases to expire');

    const before = await oldestAgeBySql();
    const stats = await outbox.stats(t.pool);
    const after = await oldestAgeBySql();

    // the numbers the script implies …
    expect(stats.counts).toEqual({ pending: 3, processing: 3, done: 3, dead: 2 });
    expect(stats.expiredLeases).toBe(2);
    expect(stats.attempts).toEqual([{ attempts: 0, count: 1 }, { attempts: 1, count: 5 }]);
    // … and the article's monitoring queries, run directly
    const counts = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM leasehold.outbox GROUP BY status`.execute(t.db);
    expect(stats.counts).toEqual({ pending: 0, processing: 0, done: 0, dead: 0, ...Object.fromEntries(counts.rows.map((r) => [r.status, Number(r.n)])) });
    const expired = await sql<{ n: string }>`
      SELECT count(*) AS n FROM leasehold.outbox WHERE status = 'processing' AND lease_until < now()`.execute(t.db);
    expect(stats.expiredLeases).toBe(Number(expired.rows[0]?.n));
    const histogram = await sql<{ attempts: number; n: string }>`
      SELECT attempts, count(*) AS n FROM leasehold.outbox WHERE status IN ('pending', 'processing')
      GROUP BY attempts ORDER BY attempts`.execute(t.db);
    expect(stats.attempts).toEqual(histogram.rows.map((r) => ({ attempts: r.attempts, count: Number(r.n) })));
    // the age grows with the database clock, so it lies between two direct readings
    expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(before);
    expect(stats.oldestPendingAgeMs).toBeLessThanOrEqual(after);
  });
});

async function oldestAgeBySql(): Promise<number> {
  const { rows } = await sql<{ ms: string }>`
    SELECT extract(epoch FROM now() - min(created_at)) * 1000 AS ms
    FROM leasehold.outbox WHERE status IN ('pending', 'processing')`.execute(t.db);
  return Number(rows[0]?.ms);
}

describe('dead letters', () => {
  it('lists dead messages with their error, a page at a time', async () => {
    await resetOutbox(t.db);
    await outbox.addMany(t.pool, events('Broken', 3));
    await dispatch('Broken', () => { throw new PermanentError('422: unknown destination'); });
    const first = await outbox.dead(t.pool, { limit: 2 });
    expect(first).toHaveLength(2);
    expect(first[0]).toMatchObject({
      aggregateType: 'order', aggregateId: 'a0', eventType: 'Broken', payload: { i: 0 }, attempts: 1, groupKey: null,
      lastError: expect.stringContaining('422: unknown destination'), createdAt: expect.any(Date),
    });
    const rest = await outbox.dead(t.pool, { limit: 2, afterId: first[1]!.id });
    expect(rest.map((m) => m.aggregateId)).toEqual(['a2']);
  });

  it('retryDead: back to pending and due, attempts reset, reason recorded; unknown and not-dead ids reported', async () => {
    await resetOutbox(t.db);
    const [dead1, dead2] = await outbox.addMany(t.pool, events('Broken', 2));
    const [fresh] = await outbox.addMany(t.pool, events('New', 1));
    await dispatch('Broken', () => { throw new PermanentError('422'); });
    const result = await outbox.retryDead(t.pool, [dead2!, '999999', fresh!, dead1!, dead1!], 'receiver fixed in v2.3');
    expect(result).toEqual({
      changed: [dead1, dead2],
      rejected: [{ id: fresh, status: 'pending' }, { id: '999999', status: null }],
    });
    expect(await readMessages(t.db, [dead1!, dead2!])).toMatchObject([
      { status: 'pending', attempts: 0, resolution: 'retried: receiver fixed in v2.3', lastError: expect.stringContaining('422') },
      { status: 'pending', attempts: 0, resolution: 'retried: receiver fixed in v2.3' },
    ]);
    // due at once: the next dispatch delivers them
    const published: string[] = [];
    await dispatchOnce(t.pool, async (row) => void published.push(row.id), { table, owner: 'after-retry', names: ['Broken'] });
    expect(published).toEqual([dead1, dead2]);
    // a second retry of the same ids changes nothing, and says so
    expect(await outbox.retryDead(t.pool, [dead1!], 'again')).toEqual({ changed: [], rejected: [{ id: dead1, status: 'done' }] });
  });

  it('skipDead unblocks an ordered aggregate; retryDead keeps it in order', async () => {
    await resetOutbox(t.db);
    const [head, second, third] = await outbox.addMany(t.pool, [0, 1, 2].map((i) => ({
      aggregateType: 'order', aggregateId: 'blocked', eventType: 'OrderPaid', payload: { i },
    })));
    await dispatch('OrderPaid', () => { throw new PermanentError('schema mismatch'); });
    expect(await readMessages(t.db)).toMatchObject([{ id: head, status: 'dead' }, { status: 'pending' }, { status: 'pending' }]);
    // the dead head blocks the aggregate
    expect(await claim(t.pool, { table, owner: 'x', batch: 10, lease: '1m' })).toEqual([]);

    expect(await outbox.skipDead(t.pool, [head!], 'bad payload, replayed by hand')).toEqual({ changed: [head], rejected: [] });
    expect((await readMessages(t.db, [head!]))[0]).toMatchObject({ status: 'done', resolution: 'skipped: bad payload, replayed by hand' });
    await dispatch('OrderPaid', () => { throw new PermanentError('still broken'); });
    expect((await readMessages(t.db, [second!]))[0]).toMatchObject({ status: 'dead' });

    // retried, the second becomes the head again; the third still waits for it
    await outbox.retryDead(t.pool, [second!], 'fixed');
    const claimed = await claim(t.pool, { table, owner: 'y', batch: 10, lease: '1m' });
    expect(claimed.map((m) => m.id)).toEqual([second]);
    expect((await readMessages(t.db, [third!]))[0]).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('rejects bad ids and an empty reason before touching the database', async () => {
    for (const [ids, reason] of [[[], 'r'], [['abc'], 'r'], [['-1'], 'r'], [['1'], ''], [['1'], '   ']] as const) {
      await expect(outbox.retryDead(t.pool, ids, reason)).rejects.toMatchObject({ code: 'CONFIG' });
      await expect(outbox.skipDead(t.pool, ids, reason)).rejects.toMatchObject({ code: 'CONFIG' });
    }
  });
});

describe('purgeDone', () => {
  it('deletes only done messages older than the bound, in batches of batchSize', async () => {
    await resetOutbox(t.db);
    await outbox.addMany(t.pool, events('Delivered', 25));
    await outbox.addMany(t.pool, events('Recent', 2));
    await outbox.addMany(t.pool, events('Broken', 1));
    await outbox.addMany(t.pool, events('Waiting', 1));
    await dispatchOnce(t.pool, async () => undefined, { table, owner: 'p', names: ['Delivered', 'Recent'], batch: 100 });
    await dispatch('Broken', () => { throw new PermanentError('422'); });
    // the delivered ones finished "8 days ago"
    await sql`UPDATE leasehold.outbox SET done_at = now() - interval '8 days' WHERE event_type = 'Delivered'`.execute(t.db);

    const result = await outbox.purgeDone(t.pool, { olderThan: '7d', batchSize: 10 });
    expect(result).toEqual({ deleted: 25, batches: 3 });
    expect((await outbox.stats(t.pool)).counts).toEqual({ pending: 1, processing: 0, done: 2, dead: 1 });
    expect(await outbox.purgeDone(t.pool, { olderThan: '7d' })).toEqual({ deleted: 0, batches: 1 });
    expect(await outbox.purgeDone(t.pool, { olderThan: 0 })).toEqual({ deleted: 2, batches: 1 });
  });

  it('never holds more than batchSize row locks: a batch skips rows another session holds', async () => {
    await resetOutbox(t.db);
    const ids = await outbox.addMany(t.pool, events('Delivered', 3));
    await dispatchOnce(t.pool, async () => undefined, { table, owner: 'p', names: ['Delivered'] });
    const holder = await t.client();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM leasehold.outbox WHERE id = $1 FOR UPDATE', [ids[0]]);
    // does not wait for the held row; takes the others
    expect(await outbox.purgeDone(t.pool, { olderThan: 0, batchSize: 10 })).toEqual({ deleted: 2, batches: 1 });
    await holder.query('COMMIT');
    expect(await outbox.purgeDone(t.pool, { olderThan: 0 })).toEqual({ deleted: 1, batches: 1 });
  });

  it('checks its options', async () => {
    await expect(outbox.purgeDone(t.pool, { olderThan: '-1d' })).rejects.toMatchObject({ code: 'CONFIG', option: 'olderThan' });
    await expect(outbox.purgeDone(t.pool, { olderThan: '7d', batchSize: 0 })).rejects.toMatchObject({ code: 'CONFIG', option: 'batchSize' });
  });
});
