// Single enqueues on a pg Pool share statements while one is in flight (task/shared-insert.ts):
// every call still gets its own task, committed when it resolves, with its own options; a
// statement that fails rejects exactly the calls it carried and writes none of them; calls that
// could wait for a lock (a group, a dedup key) never share.
import { defineLimit, defineTask, enqueue } from '@leasehold/core';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});

/** A pool that counts its INSERT statements into the task table, and can fail the next ones. */
function countingPool(): { pool: pg.Pool; inserts: () => number; failNext: (n: number) => void } {
  const pool = new pg.Pool({ connectionString: t.url, max: 10 });
  pools.push(pool);
  let inserts = 0;
  let failing = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
    if (text?.includes('INSERT INTO "leasehold"."task"')) {
      inserts++;
      if (failing > 0) {
        failing--;
        return Promise.reject(new Error('injected: the statement failed'));
      }
    }
    return query(...args);
  };
  return { pool, inserts: () => inserts, failNext: (n) => void (failing = n) };
}

const mail = defineTask<{ n: number }>('shared.mail', { handler: () => {} });
const sms = defineTask<{ n: number }>('shared.sms', { maxAttempts: 3, handler: () => {} });
const paced = defineLimit('shared.paced', { concurrency: 2 });
const limited = defineTask<{ n: number }>('shared.limited', { limit: paced, handler: () => {} });

interface Stored {
  id: string;
  name: string;
  n: number;
  priority: number;
  max_attempts: number;
  scheduled: boolean;
  flow: string | null;
}

async function stored(ids: readonly string[]): Promise<Map<string, Stored>> {
  const { rows } = await sql<Stored>`
    SELECT id::text, name, (payload->>'n')::int AS n, priority, max_attempts, scheduled, flow
    FROM leasehold.task WHERE id = ANY(${ids}::bigint[])`.execute(t.db);
  return new Map(rows.map((r) => [r.id, r]));
}

describe('single enqueues on a pool', () => {
  it('2,000 concurrent calls of three task types with their own options each get their own committed task, in far fewer statements', async () => {
    const { pool, inserts } = countingPool();
    const calls = Array.from({ length: 2_000 }, (_, n) => {
      if (n % 3 === 0) return enqueue(pool, mail, { n }, { priority: n % 5 });
      if (n % 3 === 1) return enqueue(pool, sms, { n }, n % 7 === 0 ? { delay: '1h' } : {});
      return enqueue(pool, limited, { n });
    });
    const results = await Promise.all(calls);
    expect(results.every((r) => r.inserted)).toBe(true);
    expect(new Set(results.map((r) => r.id)).size).toBe(2_000);
    const rows = await stored(results.map((r) => r.id));
    results.forEach((r, n) => {
      const row = rows.get(r.id)!;
      expect(row.n).toBe(n);
      if (n % 3 === 0) expect(row).toMatchObject({ name: 'shared.mail', priority: n % 5, max_attempts: mail.maxAttempts, scheduled: false, flow: null });
      else if (n % 3 === 1) expect(row).toMatchObject({ name: 'shared.sms', priority: 0, max_attempts: 3, scheduled: n % 7 === 0, flow: null });
      else expect(row).toMatchObject({ name: 'shared.limited', flow: 'shared.paced' });
    });
    // one statement at a time per pool: the calls that arrived meanwhile went out together
    expect(inserts()).toBeLessThan(200);
  });

  it('callers that enqueue again as soon as their call resolves (8 loops) share each statement, all 8 together', async () => {
    const { pool, inserts } = countingPool();
    const PER_LOOP = 50;
    const ids = await Promise.all(
      Array.from({ length: 8 }, async (_, loop) => {
        const mine: string[] = [];
        for (let n = 0; n < PER_LOOP; n++) mine.push((await enqueue(pool, mail, { n: loop * 1_000 + n })).id);
        return mine;
      }),
    );
    expect(new Set(ids.flat()).size).toBe(8 * PER_LOOP);
    const rows = await stored(ids.flat());
    ids.forEach((mine, loop) => mine.forEach((id, n) => expect(rows.get(id)?.n).toBe(loop * 1_000 + n)));
    // the first call goes out alone and the other seven share the second statement with its
    // caller's next call; from then on every statement carries one call of each loop (sent at
    // once instead, the first caller to come back went alone each time: some 100 statements)
    expect(inserts()).toBeLessThanOrEqual(PER_LOOP + 1);
  });

  it('a lone call goes out at once, and calls made one after another each get their own statement', async () => {
    const { pool, inserts } = countingPool();
    for (let n = 0; n < 5; n++) await enqueue(pool, mail, { n });
    expect(inserts()).toBe(5);
  });

  it('a statement that fails rejects exactly the calls it carried and writes none of them; the calls after it succeed', async () => {
    const report = defineTask<{ n: number }>('shared.report', { handler: () => {} });
    const { pool, failNext } = countingPool();
    // the first call goes out alone (it is sent before this line returns); the next 99 arrive
    // while it is in flight and share the second statement, which fails
    const first = enqueue(pool, report, { n: -1 });
    failNext(1);
    const shared = await Promise.allSettled(Array.from({ length: 99 }, (_, n) => enqueue(pool, report, { n })));
    expect(shared.map((s) => s.status)).toEqual(Array.from({ length: 99 }, () => 'rejected'));
    expect((shared[0] as PromiseRejectedResult).reason).toMatchObject({ message: 'injected: the statement failed' });
    expect((await first).inserted).toBe(true);
    const after = await Promise.all([enqueue(pool, report, { n: 1_000 }), enqueue(pool, report, { n: 1_001 })]);
    expect(after.every((r) => r.inserted)).toBe(true);
    const { rows } = await sql<{ n: number }>`SELECT (payload->>'n')::int AS n FROM leasehold.task WHERE name = 'shared.report' ORDER BY 1`.execute(t.db);
    expect(rows.map((r) => r.n)).toEqual([-1, 1_000, 1_001]);
  });

  it('calls with a dedup key or a group go alone: a group held by an open transaction holds up no other call', async () => {
    const ordered = defineTask<{ n: number }>('shared.ordered', { ordered: true, handler: () => {} });
    const { pool } = countingPool();
    // an application transaction that enqueued into group g and stays open holds g's lock
    const holder = await t.pool.connect();
    try {
      await holder.query('BEGIN');
      await enqueue(holder, ordered, { n: 0 }, { groupKey: 'g' });
      const waiting = enqueue(pool, ordered, { n: 1 }, { groupKey: 'g' });
      // plain calls made meanwhile do not queue behind it
      const plain = await Promise.all(Array.from({ length: 20 }, (_, n) => enqueue(pool, mail, { n: 2_000 + n })));
      expect(plain.every((r) => r.inserted)).toBe(true);
      const deduped = await Promise.all([enqueue(pool, mail, { n: 3_000 }, { dedupKey: 'k' }), enqueue(pool, mail, { n: 3_001 }, { dedupKey: 'k' })]);
      expect(deduped[1]!.id).toBe(deduped[0]!.id);
      expect(deduped.map((r) => r.inserted).sort()).toEqual([false, true]);
      await holder.query('COMMIT');
      expect((await waiting).inserted).toBe(true);
    } finally {
      holder.release();
    }
  });
});
