// The worker answers a notification with a ready-only claim (the `ready` source alone, the
// shorter statement on the path from a commit to a handler) and sends the whole claim before it
// sleeps, after a poll, and at least every WHOLE_CLAIM_EVERY_MS while busy. These tests pin down
// what the short claim leaves alone, and that a worker that never sleeps still takes everything
// only the whole claim takes: scheduled rows that came due and a crashed worker's expired lease.
import { claim, createWorker, defineTask, enqueue, enqueueMany, taskTable } from '@leasehold/core';
import { leaseClaim } from '@leasehold/core/internal';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { readTask, useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
// registered before useWorkers: hooks run in reverse, so workers stop before their pools end
const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});
const track = useWorkers();
const table = taskTable();

/**
 * A pool that counts the claim statements its clients send, by kind, and those not answered yet:
 * the pool's clients and the worker's LISTEN connection (built from the pool's `Client`), where
 * the worker sends its claims while it is up.
 */
function countingPool(): { pool: pg.Pool; claims: { readyOnly: number; whole: number; inFlight: number } } {
  const claims = { readyOnly: 0, whole: 0, inFlight: 0 };
  class CountingClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      const query = this.query.bind(this) as (...args: unknown[]) => unknown;
      (this as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const text = typeof args[0] === 'object' && args[0] !== null ? (args[0] as { text?: string }).text : undefined;
        if (!text?.includes('ready AS (')) return query(...args);
        if (text.includes('doomed AS (')) claims.whole++;
        else claims.readyOnly++;
        claims.inFlight++;
        let settled = false;
        const settle = () => void (settled || ((settled = true), claims.inFlight--));
        // the pool hands its client a submittable with a callback; the worker's LISTEN connection
        // is sent a config object, and answers with a promise
        const last = args.length - 1;
        if (typeof args[last] === 'function') {
          const callback = args[last] as (...a: unknown[]) => void;
          args[last] = (...a: unknown[]) => {
            settle();
            callback(...a);
          };
        }
        const sent = query(...args) as { then?: (ok: () => void, failed: () => void) => unknown } | undefined;
        if (typeof sent?.then === 'function') sent.then(settle, settle);
        return sent;
      };
    }
  }
  const pool = new pg.Pool({ connectionString: t.url, max: 10, application_name: 'ready-only-claim', Client: CountingClient as unknown as typeof pg.Client });
  pools.push(pool);
  return { pool, claims };
}

describe('ready-only claims', () => {
  it('take only pending rows due now: no scheduled row that came due, no expired lease, no reap, no parked row woken', async () => {
    const job = defineTask<{ k: string }>('ready-only.job', { handler: () => {} });
    // a crashed worker's two tasks: one with attempts left, one on its last attempt
    const [expired, doomed] = await enqueueMany(t.pool, job, [{ payload: { k: 'expired' } }, { payload: { k: 'doomed' }, maxAttempts: 1 }]);
    const taken = await claim(t.pool, { owner: 'crashed', batch: 2, lease: '1m' });
    expect(taken.map((r) => r.id).sort()).toEqual([expired!.id, doomed!.id].sort());
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second' WHERE id IN (${expired!.id}, ${doomed!.id})`.execute(t.db);
    const ready = await enqueue(t.pool, job, { k: 'ready' });
    // a retry whose backoff is over, and a workflow whose sleep is over
    const due = await enqueue(t.pool, job, { k: 'due' }, { delay: '1h' });
    await sql`UPDATE leasehold.task SET available_at = now() - interval '1 second' WHERE id = ${due.id}`.execute(t.db);
    const parked = await enqueue(t.pool, job, { k: 'parked' });
    await sql`UPDATE leasehold.task SET status = 'waiting', scheduled = true, available_at = now() - interval '1 second' WHERE id = ${parked.id}`.execute(t.db);

    const short = await leaseClaim(t.pool, table, { owner: 'me', batch: 16, leaseMs: 60_000, readyOnly: true });
    expect(short.claimed.map((r) => r.id)).toEqual([ready.id]);
    expect(short.reaped).toEqual([]);
    expect((await readTask(t.db, expired!.id)).leaseOwner).toBe('crashed');
    expect((await readTask(t.db, doomed!.id)).status).toBe('processing');
    expect((await readTask(t.db, due.id)).status).toBe('pending');
    expect((await readTask(t.db, parked.id)).status).toBe('waiting');

    // the whole claim takes the rest: the due row, the expired lease, the reap, and the parked
    // row whose wake is due (straight from waiting, in the same claim)
    const whole = await leaseClaim(t.pool, table, { owner: 'me', batch: 16, leaseMs: 60_000 });
    expect(whole.claimed.map((r) => r.id).sort()).toEqual([expired!.id, due.id, parked.id].sort());
    expect(whole.reaped.map((r) => r.id)).toEqual([doomed!.id]);
    expect((await readTask(t.db, doomed!.id)).status).toBe('dead');
    expect((await readTask(t.db, parked.id)).status).toBe('processing');
    // nothing else was due: the claim does not ask to be sent again at once
    expect(whole.nextDueMs).toBeNull();
  });

  it('a worker that never sleeps still takes a crashed worker\'s expired lease and a task that came due, through its whole claims', async () => {
    const { pool, claims } = countingPool();
    const ran: string[] = [];
    let flooding = true;
    // every flood task enqueues the next one, so hundreds stay ready and every claim comes back
    // full: the worker never arms, never sleeps, and only its periodic whole claim can see the rest
    const flood = defineTask<Record<string, never>>('ready-only.flood', {
      handler: async () => {
        if (flooding) await enqueue(t.pool, flood, {});
      },
    });
    const other = defineTask<{ k: string }>('ready-only.other', { handler: ({ k }) => void ran.push(k) });
    const victim = await enqueue(t.pool, other, { k: 'victim' });
    const [crashed] = await claim(t.pool, { owner: 'crashed', batch: 1, lease: '1s' });
    expect(crashed!.id).toBe(victim.id);
    await enqueueMany(t.pool, flood, Array.from({ length: 400 }, () => ({ payload: {} })));

    const worker = track(createWorker({ pool, tasks: [flood, other], concurrency: 4, prefetch: 0, pollInterval: '60s' }));
    await worker.start();
    // due only after the worker is busy: scheduled, so no claim could take it on arrival
    await enqueue(t.pool, other, { k: 'due' }, { delay: '1500ms' });
    // (no wait for the victim's lease to run out first: the worker's looks see it coming, and its
    // next whole claim after that moment takes it over, often before a poll here could see it out)
    await expect.poll(() => [...ran].sort(), { timeout: 30_000, interval: 20 }).toEqual(['due', 'victim']);
    flooding = false;
    const flooded = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE name = 'ready-only.flood' AND status = 'pending'`.execute(t.db)).rows[0]!.n);
    // the flood never ran dry while they waited, and both kinds of claim were sent
    expect(flooded).toBeGreaterThan(100);
    expect(claims.readyOnly).toBeGreaterThan(0);
    expect(claims.whole).toBeGreaterThan(0);
    expect((await readTask(t.db, victim.id)).attempts).toBe(2);
    await worker.stop();
  });

  it('the claim answering a wake-up goes out on the LISTEN connection, and stop() lets it answer: its task is given back, not left leased', async () => {
    const { pool, claims } = countingPool();
    const job = defineTask<Record<string, never>>('ready-only.stopping', { handler: () => {} });
    const worker = track(createWorker({ pool, tasks: [job], pollInterval: '60s' }));
    await worker.start();
    // asleep: it announced so in the wake sequence (core migration 5), and the claim it sends
    // right after announcing has been answered. (That claim, sent after the lock below, would
    // wait for it on the pool, and the wake-up could not be answered until it ended.) It is sent
    // in the same run of the event loop as the announcement's answer arrives, so once this
    // process sees no claim in flight after the announcement, the worker sleeps.
    await expect
      .poll(
        async () =>
          (await sql<{ asleep: boolean }>`SELECT pg_sequence_last_value('leasehold.task_wake') > date_part('epoch', clock_timestamp()) * 1000 AS asleep`.execute(t.db)).rows[0]!.asleep &&
          claims.inFlight === 0,
        { timeout: 20_000 },
      )
      .toBe(true);
    // a task whose insert holds the table until it commits, so the claim that a notification sets
    // off waits in the server for as long as the test likes
    const holder = new pg.Client({ connectionString: t.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      const { rows } = await holder.query<{ id: string }>(`INSERT INTO leasehold.task (name, payload) VALUES ('ready-only.stopping', '{}') RETURNING id::text`);
      await holder.query('LOCK TABLE leasehold.task IN EXCLUSIVE MODE');
      await sql`SELECT pg_notify('leasehold:leasehold.task', '')`.execute(t.db);
      // the ready-only claim the notification set off waits for the lock on a connection that is
      // not one of the pool's: the LISTEN connection (it opens with the pool's settings, so it has
      // the pool's application_name). Whole claims the pool sends meanwhile (a busy machine may
      // delay the worker's sleep) are not what this looks for.
      const poolPids = () => new Set((pool as unknown as { _clients: { processID: number }[] })._clients.map((c) => c.processID));
      await expect
        .poll(async () => {
          const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'ready-only-claim' AND wait_event_type = 'Lock'
              AND query LIKE '%ready AS (%' AND query NOT LIKE '%doomed AS (%'`.execute(t.db);
          const pids = poolPids();
          return rows.some((r) => !pids.has(r.pid));
        }, { timeout: 20_000, interval: 10 })
        .toBe(true);
      const stopped = worker.stop({ timeout: 0 });
      await holder.query('COMMIT');
      await stopped;
      // the claim took the task and the stopping worker released it, attempt refunded
      expect(await readTask(t.db, rows[0]!.id)).toMatchObject({ status: 'pending', attempts: 0, leaseVersion: 1, leaseOwner: null });
    } finally {
      await holder.end();
    }
  });

  it("a whole claim wakes a due parked run of a task type it does not run back to pending, and asks to be sent again at once", async () => {
    const mine = defineTask<{ k: string }>('ready-only.mine', { handler: () => {} });
    const theirs = defineTask<{ k: string }>('ready-only.theirs', { handler: () => {} });
    const parked = await enqueue(t.pool, theirs, { k: 'parked' });
    await sql`UPDATE leasehold.task SET status = 'waiting', scheduled = true, wait_for = 'sleep', available_at = now() - interval '1 second' WHERE id = ${parked.id}`.execute(t.db);
    const later = await enqueue(t.pool, mine, { k: 'later' }, { delay: '500ms' });
    const whole = await leaseClaim(t.pool, table, { owner: 'me', batch: 16, leaseMs: 60_000, names: [mine.name], dueWithinMs: 2_000 });
    expect(whole.claimed).toEqual([]);
    // woken for whichever worker runs it: pending (due), no longer waiting
    const row = await readTask(t.db, parked.id);
    expect(row.status).toBe('pending');
    expect(whole.nextDueMs).toBe(0);
    // the next claim (nothing woken) reports when its own scheduled row comes due
    const next = await leaseClaim(t.pool, table, { owner: 'me', batch: 16, leaseMs: 60_000, names: [mine.name], dueWithinMs: 2_000 });
    expect(next.claimed).toEqual([]);
    expect(next.nextDueMs).toBeGreaterThan(0);
    expect(next.nextDueMs).toBeLessThanOrEqual(500);
    expect((await readTask(t.db, later.id)).status).toBe('pending');
  });
});
