// The design article's eleven scenarios (section 7), with the article's numbers, through the
// public API of @leasehold/core against a real PostgreSQL.
import { sql } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  claim,
  DeferError,
  dispatchOnce,
  markDead,
  markDone,
  PermanentError,
  RetryableError,
  type Claimed,
  type TaskRow,
} from '@leasehold/core';
import { insertTasks, makeDue, readTask, useTestDatabase, waitForLeaseExpiry } from '../fixtures.js';
import { gate } from '../workers.js';

const t = useTestDatabase();

async function reset(): Promise<void> {
  await sql`TRUNCATE leasehold.task`.execute(t.db);
}

describe('the design article, section 7', () => {
  it('1. four workers claiming 200 tasks, 7 at a time, take each exactly once', async () => {
    await reset();
    await insertTasks(t.db, 200);
    const clients = await Promise.all([0, 1, 2, 3].map(() => t.client()));
    const taken = await Promise.all(
      clients.map(async (client, w) => {
        const mine: string[] = [];
        for (;;) {
          const batch = await claim(client, { owner: `w${w}`, batch: 7, lease: '30s' });
          if (batch.length === 0) return mine;
          expect(batch.length).toBeLessThanOrEqual(7);
          mine.push(...batch.map((task) => task.id));
        }
      }),
    );
    const all = taken.flat();
    expect(all).toHaveLength(200);
    expect(new Set(all).size).toBe(200);
  });

  it('2. the broken dispatcher (publish after COMMIT) publishes the same messages twice', async () => {
    await reset();
    await insertTasks(t.db, 3);
    const published: string[] = [];
    const a = await t.client();
    const b = await t.client();
    const aInPublish = gate();
    const releaseA = gate();

    // the article's dispatch_broken: lock, COMMIT, then publish, then mark done
    async function dispatchBroken(conn: pg.Client, publish: (id: string) => Promise<void>) {
      await conn.query('BEGIN');
      const { rows } = await conn.query<{ id: string }>(
        `SELECT id FROM leasehold.task WHERE status = 'pending' ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED`,
      );
      await conn.query('COMMIT'); // the row locks are gone from here on
      for (const { id } of rows) {
        await publish(id);
        await conn.query(`UPDATE leasehold.task SET status = 'done', done_at = now() WHERE id = $1`, [id]);
      }
    }

    const runA = dispatchBroken(a, async (id) => {
      aInPublish.open();
      await releaseA.wait; // A stalls inside the external call
      published.push(id);
    });
    await aInPublish.wait;
    await dispatchBroken(b, async (id) => void published.push(id));
    releaseA.open();
    await runA;

    const counts = new Map<string, number>();
    for (const id of published) counts.set(id, (counts.get(id) ?? 0) + 1);
    expect([...counts.values()]).toEqual([2, 2, 2]);

    // the lease design under the same interleaving: B finds nothing to take while A holds the lease
    await reset();
    await insertTasks(t.db, 3);
    const leased: string[] = [];
    const aLeased = gate();
    const releaseLeased = gate();
    const leaseA = dispatchOnce(
      a,
      async (task) => {
        aLeased.open();
        await releaseLeased.wait;
        leased.push(task.id);
      },
      { owner: 'A', lease: '30s' },
    );
    await aLeased.wait;
    const reportB = await dispatchOnce(b, async (task) => void leased.push(task.id), { owner: 'B' });
    releaseLeased.open();
    await leaseA;
    expect(reportB.claimed).toBe(0);
    expect(leased).toHaveLength(3);
    expect(new Set(leased).size).toBe(3);
  });

  it('3. four workers running dispatchOnce over 100 tasks publish each once, and all end done', async () => {
    await reset();
    const ids = await insertTasks(t.db, 100);
    const published: string[] = [];
    const clients = await Promise.all([0, 1, 2, 3].map(() => t.client()));
    await Promise.all(
      clients.map(async (client, w) => {
        for (;;) {
          const report = await dispatchOnce(client, async (task) => void published.push(task.id), {
            owner: `w${w}`,
            batch: 10,
          });
          expect(report.lost).toEqual([]);
          if (report.claimed === 0) return;
        }
      }),
    );
    expect(published.sort()).toEqual([...ids].sort());
    const { rows } = await sql<{ status: string; n: string }>`
      SELECT status, count(*) AS n FROM leasehold.task GROUP BY status`.execute(t.db);
    expect(rows).toEqual([{ status: 'done', n: '100' }]);
  });

  it('4. a crashed worker\'s lease expires; the next claim takes over with lease_version + 1 and the stale finalize is refused', async () => {
    await reset();
    await insertTasks(t.db, 1);
    const [a] = await claim(t.pool, { owner: 'A', batch: 10, lease: 200 });
    expect(a).toBeDefined();
    expect(await claim(t.pool, { owner: 'B', batch: 10, lease: '30s' })).toEqual([]); // leased: not claimable
    await waitForLeaseExpiry(t.db, a!.id);
    const [b] = await claim(t.pool, { owner: 'B', batch: 10, lease: '30s' });
    expect(b?.id).toBe(a!.id);
    expect(b?.leaseVersion).toBe(a!.leaseVersion + 1);
    expect(b?.attempts).toBe(2);
    expect(await markDone(t.pool, a!)).toBe(false);
    expect(await markDone(t.pool, b!)).toBe(true);
    expect((await readTask(t.db, a!.id)).status).toBe('done');
  });

  it('5. an expired lease that nobody took over still finalizes', async () => {
    await reset();
    await insertTasks(t.db, 1);
    const [a] = await claim(t.pool, { owner: 'A', batch: 1, lease: 200 });
    await waitForLeaseExpiry(t.db, a!.id);
    expect(await markDone(t.pool, a!)).toBe(true);
    const row = await readTask(t.db, a!.id);
    expect(row.status).toBe('done');
    expect(row.doneAt).toBeInstanceOf(Date);
  });

  it('6. three retryable failures with max_attempts 3: pending (1), pending (2), dead (3)', async () => {
    await reset();
    const [id] = await insertTasks(t.db, 1, { maxAttempts: 3 });
    const backoff = { baseMs: 1_000, capMs: 60_000 };
    const fail = async () => {
      throw new RetryableError('503 from the broker');
    };
    for (const attempt of [1, 2]) {
      const report = await dispatchOnce(t.pool, fail, { owner: 'A', backoff });
      expect(report.outcomes).toEqual([{ id, outcome: 'retryable', won: true }]);
      const row = await readTask(t.db, id!);
      expect(row).toMatchObject({ status: 'pending', attempts: attempt });
      expect(row.lastError).toContain('503 from the broker');
      // full jitter: somewhere in [0, min(cap, base·2^attempt))
      expect(row.availableInMs).toBeGreaterThan(-1_000);
      expect(row.availableInMs).toBeLessThan(backoff.baseMs * 2 ** attempt);
      await makeDue(t.db, id!);
    }
    await dispatchOnce(t.pool, fail, { owner: 'A', backoff });
    const row = await readTask(t.db, id!);
    expect(row).toMatchObject({ status: 'dead', attempts: 3 });
    expect(row.lastError).toMatch(/^retries exhausted: .*503 from the broker/);
  });

  it('7. a business defer keeps attempts at 0 and moves available_at', async () => {
    await reset();
    const [id] = await insertTasks(t.db, 1);
    const report = await dispatchOnce(
      t.pool,
      async () => {
        throw new DeferError('30s', 'customer account not created yet');
      },
      { owner: 'A' },
    );
    expect(report.outcomes).toEqual([{ id, outcome: 'defer', won: true }]);
    const row = await readTask(t.db, id!);
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    expect(row.lastError).toBe('deferred: customer account not created yet');
    expect(row.availableInMs).toBeGreaterThan(29_000);
    expect(row.availableInMs).toBeLessThanOrEqual(30_000);
    expect(await claim(t.pool, { owner: 'B', batch: 1, lease: '1m' })).toEqual([]);
  });

  it('8. a permanent failure goes dead at once', async () => {
    await reset();
    const [id] = await insertTasks(t.db, 1);
    await dispatchOnce(
      t.pool,
      async () => {
        throw new PermanentError('422: unknown destination');
      },
      { owner: 'A' },
    );
    const row = await readTask(t.db, id!);
    expect(row).toMatchObject({ status: 'dead', attempts: 1 });
    expect(row.lastError).toContain('422: unknown destination');
  });

  it('9. claimed and never finalized three times (max 3): dead at attempts 3, never claimed again', async () => {
    await reset();
    const [id] = await insertTasks(t.db, 1, { maxAttempts: 3 });
    for (const attempt of [1, 2, 3]) {
      const [task] = await claim(t.pool, { owner: `crash-${attempt}`, batch: 1, lease: 100 });
      expect(task).toMatchObject({ id, attempts: attempt });
      await waitForLeaseExpiry(t.db, id!); // the worker "crashed": nobody finalizes
    }
    expect(await claim(t.pool, { owner: 'next', batch: 10, lease: '1m' })).toEqual([]);
    const row = await readTask(t.db, id!);
    expect(row).toMatchObject({ status: 'dead', attempts: 3, lastError: 'lease expired after max attempts (worker crash?)' });
    expect(await claim(t.pool, { owner: 'later', batch: 10, lease: '1m' })).toEqual([]);
  });

  it('10. ordered claim: groups X(3) and Y(2) hand out only their heads, the next after each head is done', async () => {
    await reset();
    const x = await insertTasks(t.db, 3, { groupKey: 'X' });
    const y = await insertTasks(t.db, 2, { groupKey: 'Y' });
    const ids = (tasks: Claimed<TaskRow>[]) => tasks.map((task) => task.id);

    const first = await claim(t.pool, { owner: 'A', batch: 10, lease: '1m' });
    expect(ids(first)).toEqual([x[0], y[0]]);
    expect(await claim(t.pool, { owner: 'B', batch: 10, lease: '1m' })).toEqual([]);
    for (const task of first) expect(await markDone(t.pool, task)).toBe(true);

    const second = await claim(t.pool, { owner: 'A', batch: 10, lease: '1m' });
    expect(ids(second)).toEqual([x[1], y[1]]);
    for (const task of second) expect(await markDone(t.pool, task)).toBe(true);

    const third = await claim(t.pool, { owner: 'A', batch: 10, lease: '1m' });
    expect(ids(third)).toEqual([x[2]]);

    // a dead head blocks its group until a person acts
    const [y3] = await insertTasks(t.db, 1, { groupKey: 'Y' });
    const [y4] = await insertTasks(t.db, 1, { groupKey: 'Y' });
    const [head] = await claim(t.pool, { owner: 'A', batch: 1, lease: '1m' });
    expect(head?.id).toBe(y3);
    expect(await markDead(t.pool, head!, { error: 'poison' })).toBe(true);
    expect(ids(await claim(t.pool, { owner: 'A', batch: 10, lease: '1m' }))).not.toContain(y4);
  });

  it('11. thirty ordered tasks of one group on four workers are finalized in id order', async () => {
    await reset();
    const ids = await insertTasks(t.db, 30, { groupKey: 'order-42' });
    const finalized: string[] = [];
    const clients = await Promise.all([0, 1, 2, 3].map(() => t.client()));
    await Promise.all(
      clients.map(async (client, w) => {
        let idle = 0;
        while (finalized.length < 30 && idle < 1_000) {
          const [task] = await claim(client, { owner: `w${w}`, batch: 5, lease: '30s' });
          if (!task) {
            idle++;
            await new Promise((r) => setImmediate(r));
            continue;
          }
          expect(await markDone(client, task)).toBe(true);
          finalized.push(task.id);
        }
      }),
    );
    expect(finalized).toEqual(ids);
  });
});
