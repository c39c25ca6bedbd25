// The producer side: add / addMany inside the application's transaction.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { isLeaseholdError, withTransaction } from '@leasehold/core';
import { createOutbox } from '@leasehold/outbox';
import { useTestDatabase, waitForLockWaiters } from '../fixtures.js';
import { gate, readMessages, resetOutbox } from './helpers.js';

const t = useTestDatabase();
const outbox = createOutbox({ orderedEventTypes: ['OrderCreated', 'OrderPaid'] });
const paid = (id: string | number) => ({ aggregateType: 'order', aggregateId: id, eventType: 'OrderPaid', payload: { id } });

describe('add', () => {
  it('a rolled-back transaction leaves no message; a committed one leaves exactly its messages', async () => {
    await resetOutbox(t.db);
    await expect(
      t.db.transaction().execute(async (trx) => {
        await outbox.add(trx, paid(1));
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    const client = await t.client();
    await client.query('BEGIN');
    await outbox.add(client, paid(2));
    await client.query('ROLLBACK');
    expect(await readMessages(t.db)).toEqual([]);

    const id = await t.db.transaction().execute((trx) => outbox.add(trx, paid(3)));
    const [row] = await readMessages(t.db);
    expect(row).toMatchObject({ id, status: 'pending', attempts: 0, groupKey: 'order:3' });
  });

  it('stores the event as given; unordered types get no group key; addMany keeps input order', async () => {
    await resetOutbox(t.db);
    const ids = await outbox.addMany(t.pool, [
      { aggregateType: 'user', aggregateId: 7n, eventType: 'Welcome', payload: [1, 'x'], headers: { trace: 'abc' } },
      paid('A-1'),
      { aggregateType: 'user', aggregateId: 7, eventType: 'Welcome', payload: null, maxAttempts: 3 },
    ]);
    expect(ids).toHaveLength(3);
    expect([...ids].sort((a, b) => Number(a) - Number(b))).toEqual(ids);
    const { rows } = await sql<Record<string, unknown>>`
      SELECT aggregate_type, aggregate_id, event_type, payload, headers, group_key, max_attempts
      FROM leasehold.outbox ORDER BY id`.execute(t.db);
    expect(rows).toEqual([
      { aggregate_type: 'user', aggregate_id: '7', event_type: 'Welcome', payload: [1, 'x'], headers: { trace: 'abc' }, group_key: null, max_attempts: 12 },
      { aggregate_type: 'order', aggregate_id: 'A-1', event_type: 'OrderPaid', payload: { id: 'A-1' }, headers: {}, group_key: 'order:A-1', max_attempts: 12 },
      { aggregate_type: 'user', aggregate_id: '7', event_type: 'Welcome', payload: null, headers: {}, group_key: null, max_attempts: 3 },
    ]);
  });

  it('rejects invalid events with a ConfigError naming the field, and writes nothing', async () => {
    await resetOutbox(t.db);
    const cases: Array<[unknown, string]> = [
      [{ ...paid(1), aggregateType: '' }, 'event.aggregateType'],
      [{ ...paid(1), aggregateType: 'a:b' }, 'event.aggregateType'],
      [{ ...paid(1), aggregateId: undefined }, 'event.aggregateId'],
      [{ ...paid(1), eventType: 42 }, 'event.eventType'],
      [{ ...paid(1), payload: undefined }, 'event.payload'],
      [{ ...paid(1), payload: { n: 1n } }, 'event.payload.n'], // the path to the fault (issue 34)
      [{ ...paid(1), payload: 'nul\u0000' }, 'event.payload'],
      [{ ...paid(1), headers: { a: 1 } }, 'event.headers.a'],
      [{ ...paid(1), maxAttempts: 0 }, 'event.maxAttempts'],
    ];
    for (const [event, option] of cases) {
      const error = await outbox.add(t.pool, event as never).catch((e: unknown) => e);
      expect(isLeaseholdError(error, 'CONFIG'), `${option}: ${String(error)}`).toBe(true);
      expect(error).toMatchObject({ option });
    }
    const error = await outbox.addMany(t.pool, [paid(1), { ...paid(2), eventType: '' }]).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIG', option: 'events[1].eventType' });
    expect(await readMessages(t.db)).toEqual([]);
    expect(() => createOutbox({ ordered: () => true, orderedEventTypes: [] })).toThrow(/either/);
    expect(() => createOutbox({ schema: 'Bad-Schema' })).toThrow(/schema/);
  });

  it('two transactions adding to one aggregate: the one that commits second never has the smaller id', async () => {
    await resetOutbox(t.db);
    for (const kind of ['kysely', 'pg client', 'pg pool'] as const) {
      const t1Added = gate();
      const t1Commit = gate();
      let t2Added = false;
      // T1 adds, then holds its transaction open until the test lets it commit
      const t1 = withTransaction(kind === 'kysely' ? t.db : t.pool, async (trx) => {
        const id = await outbox.add(trx, paid('race'));
        t1Added.open();
        await t1Commit.wait;
        return id;
      });
      await t1Added.wait;
      // T2 adds to the same aggregate meanwhile, through each kind of executor
      const t2 = (async () => {
        let id: string;
        if (kind === 'kysely') id = await t.db.transaction().execute((trx) => outbox.add(trx, paid('race')));
        else if (kind === 'pg pool') id = await outbox.add(t.pool, paid('race'));
        else {
          const client = await t.client();
          id = await outbox.add(client, paid('race')); // no BEGIN: add opens and commits its own
        }
        t2Added = true;
        return id;
      })();
      await waitForLockWaiters(t.db);
      expect(t2Added).toBe(false); // T2 waits on the aggregate lock until T1 commits
      t1Commit.open();
      // T2 could only insert (and so take its id) after T1's commit released the lock. The order
      // in which the two promises settle in JS says nothing about commit order, so it is not checked.
      const [id1, id2] = await Promise.all([t1, t2]);
      expect(Number(id1)).toBeLessThan(Number(id2));
    }
  });

  it('eight concurrent producers of one aggregate commit in id order', async () => {
    await resetOutbox(t.db);
    // Right after its insert, each producer counts the committed rows of the aggregate with a
    // smaller id. If every smaller id was already committed then, no smaller id can commit later.
    const seen = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.db.transaction().execute(async (trx) => {
          const id = await outbox.add(trx, paid('busy'));
          const { rows } = await sql<{ n: string }>`
            SELECT count(*) AS n FROM leasehold.outbox WHERE aggregate_id = ${paid('busy').aggregateId} AND id < ${id}`.execute(trx);
          // vary how long each transaction stays open after its insert
          for (let n = 0; n < (i * 7) % 5; n++) await sql`SELECT 1`.execute(trx);
          return { id: Number(id), committedBefore: Number(rows[0]?.n) };
        }),
      ),
    );
    const ids = seen.map((s) => s.id).sort((a, b) => a - b);
    for (const { id, committedBefore } of seen) expect(committedBefore).toBe(ids.indexOf(id));
  });

  it('an unordered event is not serialised, so its ids need not follow commit order', async () => {
    await resetOutbox(t.db);
    const c1 = await t.client();
    await c1.query('BEGIN');
    const id1 = await outbox.add(c1, { ...paid('free'), eventType: 'Notification' });
    const id2 = await outbox.add(t.pool, { ...paid('free'), eventType: 'Notification' }); // commits at once
    await c1.query('COMMIT');
    // the hazard the aggregate lock removes for ordered types: the later commit has the smaller id
    expect(Number(id1)).toBeLessThan(Number(id2));
    expect((await readMessages(t.db)).map((m) => m.id)).toEqual([id1, id2]);
  });
});
