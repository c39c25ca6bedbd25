// The dispatcher through the public API, against a real PostgreSQL: the transactional
// guarantee end to end, the design article's outbox scenarios, and the Publisher boundary.
import { describe, expect, it } from 'vitest';
import { claim, DeferError, isLeaseholdError, PermanentError, RetryableError } from '@leasehold/core';
import { createDispatcher, createOutbox, type Dispatcher, type OutboxMessage, type Publisher } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { gate, readMessages, resetOutbox, waitUntil } from './helpers.js';

const t = useTestDatabase();
const track = useWorkers();
// An ordered message becomes claimable when its predecessor's done is written, which sends no
// NOTIFY; a short poll keeps these tests quick whichever dispatcher happens to look next.
const ORDERED_POLL = 100;
const outbox = createOutbox({ orderedEventTypes: ['OrderCreated', 'OrderPaid', 'OrderShipped'] });

/** A publisher that records every message it is given, and may fail on purpose. */
function recorder(fail?: (m: OutboxMessage) => void): Publisher & { seen: OutboxMessage[] } {
  const seen: OutboxMessage[] = [];
  return {
    seen,
    async publish(message) {
      seen.push(message);
      fail?.(message);
    },
  };
}

function dispatcher(publisher: Publisher, options: Partial<Parameters<typeof createDispatcher>[0]> = {}): Dispatcher {
  return track(createDispatcher({ pool: t.pool, publisher, pollInterval: '1s', ...options }));
}

/** Counts `task:succeeded` over several dispatchers. */
function succeededCounter(dispatchers: Dispatcher[]): () => number {
  let n = 0;
  for (const d of dispatchers) d.on('task:succeeded', () => void n++);
  return () => n;
}

describe('the dispatcher', () => {
  it('delivers what a committed transaction added, and never what a rolled-back one added', async () => {
    await resetOutbox(t.db);
    const publisher = recorder();
    const d = dispatcher(publisher);
    await d.start();
    await expect(
      t.db.transaction().execute(async (trx) => {
        await outbox.add(trx, { aggregateType: 'order', aggregateId: 'r', eventType: 'OrderCreated', payload: { n: 1 } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const delivered = nextEvent(d, 'task:succeeded');
    const id = await t.db.transaction().execute((trx) =>
      outbox.add(trx, { aggregateType: 'order', aggregateId: 'c', eventType: 'OrderCreated', payload: { n: 2 }, headers: { trace: 't-1' } }),
    );
    expect((await delivered).task.id).toBe(id);
    await d.stop();
    expect(publisher.seen).toEqual([
      { id, key: 'c', aggregateType: 'order', eventType: 'OrderCreated', payload: { n: 2 }, headers: { trace: 't-1' }, attempts: 1, createdAt: expect.any(Date) },
    ]);
    expect(await readMessages(t.db)).toMatchObject([{ id, status: 'done' }]);
  });

  it('maps what the publisher throws: retryable → pending with backoff, defer → refunded, permanent → dead', async () => {
    await resetOutbox(t.db);
    const publisher = recorder((m) => {
      if (m.eventType === 'Flaky') throw new RetryableError('503 from the broker');
      if (m.eventType === 'Early') throw new DeferError('1m', 'customer not created yet');
      if (m.eventType === 'Bad') throw new PermanentError('422: unknown destination');
    });
    const d = dispatcher(publisher, { backoff: { base: '10s', cap: '10s' } });
    const [flaky, early, bad] = await outbox.addMany(t.pool, ['Flaky', 'Early', 'Bad'].map((eventType) => ({
      aggregateType: 'user', aggregateId: 1, eventType, payload: {},
    })));
    const events = Promise.all([nextEvent(d, 'task:retrying'), nextEvent(d, 'task:deferred'), nextEvent(d, 'task:dead')]);
    await d.start();
    const [retrying, deferred, dead] = await events;
    await d.stop();
    expect(retrying.task.id).toBe(flaky);
    expect(deferred).toMatchObject({ task: { id: early }, reason: 'customer not created yet' });
    expect(dead.task.id).toBe(bad);
    expect(await readMessages(t.db)).toMatchObject([
      { id: flaky, status: 'pending', attempts: 1, lastError: expect.stringContaining('503 from the broker') },
      { id: early, status: 'pending', attempts: 0, lastError: 'deferred: customer not created yet' },
      { id: bad, status: 'dead', attempts: 1, lastError: expect.stringContaining('422: unknown destination') },
    ]);
  });

  it('aborts a publish at publishTimeout (a retryable failure) and on shutdown (released, attempt refunded)', async () => {
    await resetOutbox(t.db);
    const reasons: unknown[] = [];
    const publisher: Publisher = {
      publish: (_m, { signal }) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => {
            reasons.push(signal.reason);
            reject(signal.reason as Error);
          }),
        ),
    };
    const d = dispatcher(publisher, { publishTimeout: 100, lease: '5s', batch: 1, concurrency: 1 });
    const [id] = await outbox.addMany(t.pool, [{ aggregateType: 'user', aggregateId: 1, eventType: 'Slow', payload: {} }]);
    const retrying = nextEvent(d, 'task:retrying');
    await d.start();
    expect(isLeaseholdError((await retrying).error, 'HANDLER_TIMEOUT')).toBe(true);
    expect(isLeaseholdError(reasons[0], 'HANDLER_TIMEOUT')).toBe(true);
    await d.stop();
    expect(await readMessages(t.db)).toMatchObject([{ id, status: 'pending', attempts: 1 }]);

    // on shutdown the same signal fires with ShutdownError and the message goes back unspent
    const patient = dispatcher(publisher, { publishTimeout: '1s', lease: '5s', batch: 1, concurrency: 1 });
    await t.db.updateTable('leasehold.outbox' as never).set({ available_at: new Date(0) } as never).execute();
    const claimed = nextEvent(patient, 'task:claimed');
    await patient.start();
    await claimed;
    await patient.stop({ timeout: 0 });
    expect(isLeaseholdError(reasons[1], 'SHUTDOWN')).toBe(true);
    expect(await readMessages(t.db)).toMatchObject([{ id, status: 'pending', attempts: 1 }]);
  });

  it('refuses to be created when batch × publishTimeout does not fit in the lease', () => {
    const publisher = recorder();
    const attempt = (o: Partial<Parameters<typeof createDispatcher>[0]>) => () => createDispatcher({ pool: t.pool, publisher, ...o });
    expect(attempt({ batch: 10, publishTimeout: '10s', lease: '60s' })).toThrow(/10 × 10000 ms = 100000 ms.*60000 ms/);
    expect(attempt({ batch: 16, concurrency: 16 })).toThrow(expect.objectContaining({ code: 'CONFIG', option: 'lease' }));
    expect(attempt({ publishTimeout: '60s' })).toThrow(expect.objectContaining({ code: 'CONFIG', option: 'lease' }));
    expect(attempt({ batch: 10, publishTimeout: '5s', lease: '60s' })).not.toThrow();
    // without an explicit batch, the default is lowered to fit: 5 × 10 s < 60 s
    expect(attempt({ concurrency: 16, publishTimeout: '10s' })).not.toThrow();
    expect(attempt({ publisher: {} as Publisher })).toThrow(expect.objectContaining({ option: 'publisher' }));
    expect(attempt({ publishTimeout: '0s' })).toThrow(expect.objectContaining({ option: 'publishTimeout' }));
  });
});

describe('the design article, outbox scenarios', () => {
  it('the broken dispatcher (publish after COMMIT) publishes twice; dispatchers on leases publish once', async () => {
    await resetOutbox(t.db);
    const event = (n: number) => ({ aggregateType: 'order', aggregateId: n, eventType: 'Notify', payload: {} });
    await outbox.addMany(t.pool, [1, 2, 3].map(event));
    const published: string[] = [];
    const [a, b] = [await t.client(), await t.client()];
    const aInPublish = gate();
    const releaseA = gate();
    // the article's dispatch_broken: lock with SKIP LOCKED, COMMIT, then publish and mark done
    const dispatchBroken = async (conn: typeof a, publish: (id: string) => Promise<void>) => {
      await conn.query('BEGIN');
      const { rows } = await conn.query<{ id: string }>(
        `SELECT id FROM leasehold.outbox WHERE status = 'pending' ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED`,
      );
      await conn.query('COMMIT'); // the row locks end here
      for (const { id } of rows) {
        await publish(id);
        await conn.query(`UPDATE leasehold.outbox SET status = 'done', done_at = now() WHERE id = $1`, [id]);
      }
    };
    const runA = dispatchBroken(a, async (id) => {
      aInPublish.open();
      await releaseA.wait;
      published.push(id);
    });
    await aInPublish.wait;
    await dispatchBroken(b, async (id) => void published.push(id));
    releaseA.open();
    await runA;
    expect(countBy(published)).toEqual([2, 2, 2]);

    // the same interleaving with two dispatchers: B finds nothing while A holds the leases
    await resetOutbox(t.db);
    await outbox.addMany(t.pool, [1, 2, 3].map(event));
    const seen: string[] = [];
    const release = gate();
    const dA = dispatcher({ publish: async (m) => { await release.wait; seen.push(m.id); } }, { concurrency: 3 });
    const dB = dispatcher({ publish: async (m) => void seen.push(m.id) }, { concurrency: 3 });
    let claimedByA = 0;
    dA.on('task:claimed', () => void claimedByA++);
    await dA.start();
    await waitUntil(() => claimedByA === 3, 'A to hold all three');
    const bIdle = nextEvent(dB, 'worker:idle');
    await dB.start();
    await bIdle;
    release.open();
    await waitUntil(async () => (await readMessages(t.db)).every((m) => m.status === 'done'), 'A to finish');
    await Promise.all([dA.stop(), dB.stop()]);
    expect(countBy(seen)).toEqual([1, 1, 1]);
  });

  it('four dispatchers over 100 messages publish each exactly once, and all end done', async () => {
    await resetOutbox(t.db);
    const ids = await outbox.addMany(t.pool, Array.from({ length: 100 }, (_, i) => ({
      aggregateType: 'user', aggregateId: i, eventType: 'Welcome', payload: { i },
    })));
    const publisher = recorder();
    const ds = [0, 1, 2, 3].map((w) => dispatcher(publisher, { owner: `d${w}`, concurrency: 4 }));
    const lost: string[] = [];
    for (const d of ds) d.on('task:lease-lost', ({ task }) => void lost.push(task.id));
    const succeeded = succeededCounter(ds);
    await Promise.all(ds.map((d) => d.start()));
    await waitUntil(() => succeeded() === 100, '100 deliveries');
    await Promise.all(ds.map((d) => d.stop()));
    expect(publisher.seen.map((m) => m.id).sort()).toEqual([...ids].sort());
    expect(lost).toEqual([]);
    expect((await outbox.stats(t.pool)).counts).toEqual({ pending: 0, processing: 0, done: 100, dead: 0 });
  });

  it('ordered claim: aggregates X(3) and Y(2) hand out only their heads, the next once each head is done', async () => {
    await resetOutbox(t.db);
    const ev = (id: string, eventType: string) => ({ aggregateType: 'order', aggregateId: id, eventType, payload: {} });
    const x = await outbox.addMany(t.pool, [ev('X', 'OrderCreated'), ev('X', 'OrderPaid'), ev('X', 'OrderShipped')]);
    const y = await outbox.addMany(t.pool, [ev('Y', 'OrderCreated'), ev('Y', 'OrderPaid')]);
    // the article's check, with core's claim on the outbox table
    const first = await claim(t.pool, { table: outbox.table, owner: 'A', batch: 10, lease: '1m' });
    expect(first.map((m) => m.id)).toEqual([x[0], y[0]]);
    expect(await claim(t.pool, { table: outbox.table, owner: 'B', batch: 10, lease: '1m' })).toEqual([]);
    await t.db.updateTable('leasehold.outbox' as never).set({ status: 'pending', lease_until: null } as never).execute();

    // and with two dispatchers: each aggregate is published in id order, one message at a time
    const publisher = serialChecker();
    const ds = [0, 1].map(() => dispatcher(publisher, { concurrency: 4, pollInterval: ORDERED_POLL }));
    const succeeded = succeededCounter(ds);
    await Promise.all(ds.map((d) => d.start()));
    await waitUntil(() => succeeded() === 5, 'five deliveries');
    await Promise.all(ds.map((d) => d.stop()));
    expect(publisher.order('X')).toEqual(x);
    expect(publisher.order('Y')).toEqual(y);
    expect(publisher.overlaps).toEqual([]);
  });

  it('thirty messages of one aggregate on four dispatchers are published in id order', async () => {
    await resetOutbox(t.db);
    const ids = await outbox.addMany(t.pool, Array.from({ length: 30 }, (_, i) => ({
      aggregateType: 'order', aggregateId: '42', eventType: 'OrderPaid', payload: { i },
    })));
    const publisher = serialChecker();
    const ds = [0, 1, 2, 3].map((w) => dispatcher(publisher, { owner: `d${w}`, concurrency: 2, pollInterval: ORDERED_POLL }));
    const succeeded = succeededCounter(ds);
    await Promise.all(ds.map((d) => d.start()));
    await waitUntil(() => succeeded() === 30, '30 deliveries');
    await Promise.all(ds.map((d) => d.stop()));
    expect(publisher.order('42')).toEqual(ids);
    expect(publisher.overlaps).toEqual([]);
  });

  it('a crashed dispatcher\'s message is published again after its lease expires, with the same id', async () => {
    await resetOutbox(t.db);
    const id = await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 'c', eventType: 'OrderPaid', payload: {} });
    // "crash": claim and never finalize
    const [crashed] = await claim(t.pool, { table: outbox.table, owner: 'crashed', batch: 1, lease: 100 });
    expect(crashed?.id).toBe(id);
    const publisher = recorder();
    const d = dispatcher(publisher, { pollInterval: 50 });
    const delivered = nextEvent(d, 'task:succeeded');
    await d.start();
    expect((await delivered).task).toMatchObject({ id, attempts: 2, leaseVersion: crashed!.leaseVersion + 1 });
    await d.stop();
    expect(publisher.seen.map((m) => [m.id, m.attempts])).toEqual([[id, 2]]);
  });

  it('one dead aggregate does not starve the others: 1,000 healthy aggregates are all delivered', async () => {
    await resetOutbox(t.db);
    // the dead aggregate's messages come first, so they hold the lowest ids
    const poison = await outbox.addMany(t.pool, Array.from({ length: 20 }, (_, i) => ({
      aggregateType: 'order', aggregateId: 'poison', eventType: 'OrderPaid', payload: { i },
    })));
    const healthy = await outbox.addMany(t.pool, Array.from({ length: 1_000 }, (_, i) => ({
      aggregateType: 'order', aggregateId: `h${i}`, eventType: 'OrderPaid', payload: { i },
    })));
    const publisher = recorder((m) => {
      if (m.key === 'poison') throw new PermanentError('schema mismatch');
    });
    const ds = [dispatcher(publisher, { concurrency: 8 }), dispatcher(publisher, { concurrency: 8 })];
    const succeeded = succeededCounter(ds);
    await Promise.all(ds.map((d) => d.start()));
    await waitUntil(() => succeeded() === 1_000, '1,000 healthy deliveries', 60_000);
    await Promise.all(ds.map((d) => d.stop()));
    expect(new Set(publisher.seen.filter((m) => m.key !== 'poison').map((m) => m.id))).toEqual(new Set(healthy));
    expect(publisher.seen.filter((m) => m.key === 'poison').map((m) => m.id)).toEqual([poison[0]]);
    const rows = await readMessages(t.db, poison);
    expect(rows[0]).toMatchObject({ status: 'dead' });
    expect(rows.slice(1).every((m) => m.status === 'pending' && m.attempts === 0)).toBe(true);
  }, 90_000);
});

function countBy(values: string[]): number[] {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.values()];
}

/** A publisher that records publish order per aggregate and any overlap inside one aggregate. */
function serialChecker(): Publisher & { order(key: string): string[]; overlaps: string[] } {
  const order = new Map<string, string[]>();
  const inFlight = new Set<string>();
  const overlaps: string[] = [];
  return {
    overlaps,
    order: (key) => order.get(key) ?? [],
    async publish(m) {
      if (inFlight.has(m.key)) overlaps.push(m.id);
      inFlight.add(m.key);
      // stay in flight across a few turns of the event loop, so overlaps would show
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      order.set(m.key, [...(order.get(m.key) ?? []), m.id]);
      inFlight.delete(m.key);
    },
  };
}
