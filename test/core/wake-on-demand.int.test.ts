// Producers notify only while a worker may be asleep (core migration 5). These tests make the
// poll interval far longer than any deadline here, so a task that starts in time was woken by a
// notification or by the guard's last claim before sleeping: a lost wake-up would wait a minute.
import { createWorker, defineSignal, defineTask, enqueue, leaseRetryDeadMany, sendSignal, taskTable, type LeaseWorker } from '@leasehold/core';
import pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { serverNow, waitUntil, wakeUntil } from '../wake-state.js';
import { countingPool } from '../counting-pool.js';

const t = useTestDatabase();
const track = useWorkers();

/** Far past every deadline below: only a notification (or the guard) can start a task in time. */
const NEVER_POLL = '60s';
/** Generous for a shared 2-core machine; a lost wake-up takes NEVER_POLL. */
const WAKE_DEADLINE_MS = 20_000;

/**
 * Two workers of one slot each, both held by a task that waits for `busy`, once their
 * announcements have lapsed: producers no longer notify. Their task, `name`, runs `kind: 'late'`
 * rows at once.
 */
async function busyWorkers(name: string) {
  const busy = gate();
  const hold = defineTask<{ kind: 'hold' | 'late' }>(name, {
    handler: async (p) => {
      if (p.kind === 'hold') await busy.wait;
    },
  });
  const workers = [0, 1].map(() => track(createWorker({ pool: t.pool, tasks: [hold], concurrency: 1, pollInterval: NEVER_POLL })));
  await Promise.all(workers.map((w) => w.start()));
  const holding = workers.map((w) => nextEvent(w, 'task:claimed', () => true, WAKE_DEADLINE_MS));
  await enqueue(t.pool, hold, { kind: 'hold' });
  await enqueue(t.pool, hold, { kind: 'hold' });
  await Promise.all(holding);
  // both workers are busy: once their announcements lapse, producers stop notifying
  await waitUntil('the announcements lapse', async () => (await wakeUntil(t.db)) < (await serverNow(t.db)));
  return { busy, workers };
}

describe('wake-ups on demand', () => {
  it('a signal sent in a transaction still open locks a task a claim could take: the worker claims again once it commits, instead of sleeping past it', async () => {
    const ran: string[] = [];
    const ping = defineTask<{ n: number }>('wake.signalled', { handler: (p) => void ran.push(String(p.n)) });
    const nudge = defineSignal<{ by: string }>('nudge');
    const ref = await enqueue(t.pool, ping, { n: 1 });
    const sent = gate();
    const commit = gate();
    // the sender's transaction locks the pending task's row until it commits
    const sender = t.db.transaction().execute(async (trx) => {
      await sendSignal(trx, ref, nudge, { by: 'ops' });
      sent.open();
      await commit.wait;
    });
    await sent.wait;
    const worker = track(createWorker({ pool: t.pool, tasks: [ping], pollInterval: NEVER_POLL }));
    const succeeded = nextEvent(worker, 'task:succeeded', (e) => e.task.id === ref.id, WAKE_DEADLINE_MS);
    await worker.start();
    // the worker's claims pass over the locked row, and it announces that it may sleep. Then the
    // announcement moves on: the worker arms again (the sender holds the wake lock), or, had it
    // gone to sleep after its last claim, it renews the announcement a second later
    try {
      await waitUntil('the worker announces it may sleep', async () => (await wakeUntil(t.db)) > (await serverNow(t.db)));
      const announced = await wakeUntil(t.db);
      await waitUntil('the worker announces again', async () => (await wakeUntil(t.db)) > announced);
    } finally {
      commit.open();
      await sender;
    }
    await succeeded;
    expect(ran).toEqual(['1']);
    await worker.stop();
  });

  it('a dead task retried while every worker sleeps starts at once', async () => {
    let calls = 0;
    const flaky = defineTask<{ n: number }>('wake.retried', {
      maxAttempts: 1,
      handler: () => {
        if (++calls === 1) throw new Error('down');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flaky], pollInterval: NEVER_POLL }));
    const died = nextEvent(worker, 'task:dead', () => true, WAKE_DEADLINE_MS);
    await worker.start();
    const ref = await enqueue(t.pool, flaky, { n: 1 });
    await died;
    await waitUntil('the worker announces it may sleep', async () => (await wakeUntil(t.db)) > (await serverNow(t.db)));
    const succeeded = nextEvent(worker, 'task:succeeded', (e) => e.task.id === ref.id, WAKE_DEADLINE_MS);
    const { changed } = await leaseRetryDeadMany(t.pool, taskTable(), [ref.id], 'fixed');
    expect(changed).toEqual([ref.id]);
    await succeeded;
    expect(calls).toBe(2);
    await worker.stop();
  });

  it('an idle worker announces that it sleeps, and a task enqueued then starts at once', async () => {
    const started: string[] = [];
    const ping = defineTask<{ n: number }>('wake.ping', { handler: (p) => void started.push(String(p.n)) });
    const worker = track(createWorker({ pool: t.pool, tasks: [ping], pollInterval: NEVER_POLL }));
    await worker.start();
    await waitUntil('the idle worker announces it may sleep', async () => (await wakeUntil(t.db)) > (await serverNow(t.db)));
    for (let n = 1; n <= 5; n++) {
      const succeeded = nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === n, WAKE_DEADLINE_MS);
      await enqueue(t.pool, ping, { n });
      await succeeded;
    }
    expect(started).toEqual(['1', '2', '3', '4', '5']);
    await worker.stop();
  });

  it('a worker woken for one task at a time announces itself about once a second, not once per task, and misses none', async () => {
    const { pool, sent } = countingPool(t.url);
    const arms = () => sent.filter((text) => text.includes('pg_try_advisory_xact_lock') && text.includes("'leasehold:wake'")).length;
    try {
      const ping = defineTask<{ n: number }>('wake.trickle', { handler: () => undefined });
      const worker = track(createWorker({ pool, tasks: [ping], pollInterval: NEVER_POLL }));
      await worker.start();
      await waitUntil('the idle worker announces it may sleep', async () => (await wakeUntil(t.db)) > (await serverNow(t.db)));
      const from = arms();
      const started = performance.now();
      for (let n = 1; n <= 20; n++) {
        const succeeded = nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === n, WAKE_DEADLINE_MS);
        await enqueue(t.pool, ping, { n });
        await succeeded;
        // the workload's pace, not a wait for the worker: tasks arrive 20 ms apart, as in the
        // trickle bench (bench/RESULTS.md); the bound below holds however far the worker got
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const seconds = (performance.now() - started) / 1_000;
      // its announcement lasts 3 s and it arms again as the end nears: at most one a second (each
      // task armed once before)
      expect(arms() - from).toBeLessThanOrEqual(1 + Math.ceil(seconds));
      await worker.stop();
    } finally {
      await pool.end();
    }
  });

  it('a producer that skipped its NOTIFY (every worker busy) and commits after they went idle is not missed', async () => {
    const { busy, workers } = await busyWorkers('wake.hold');

    const producer = await t.client();
    await producer.query('BEGIN');
    await producer.query(`INSERT INTO leasehold.task (name, payload) VALUES ('wake.hold', '{"kind":"late"}')`);
    // the workers finish and try to sleep while the producer's insert is uncommitted
    const idle = workers.map((w) => nextEvent(w, 'worker:idle', () => true, WAKE_DEADLINE_MS));
    busy.open();
    await Promise.all(idle);
    const late = Promise.race(
      workers.map((w) => nextEvent(w, 'task:succeeded', (e) => (e.task.payload as { kind: string }).kind === 'late', WAKE_DEADLINE_MS)),
    );
    await producer.query('COMMIT');
    await late;
    await Promise.all(workers.map((w) => w.stop()));
  });

  it('a transaction that inserts again after the workers went idle is not missed (the wake work runs once per transaction)', async () => {
    const { busy, workers } = await busyWorkers('wake.again');

    const producer = await t.client();
    await producer.query('BEGIN');
    // the first insert does the transaction's wake work (no worker asleep: no NOTIFY, the lock held)
    await producer.query(`INSERT INTO leasehold.task (name, payload) VALUES ('wake.again', '{"kind":"late"}')`);
    const idle = workers.map((w) => nextEvent(w, 'worker:idle', () => true, WAKE_DEADLINE_MS));
    busy.open();
    await Promise.all(idle);
    // the second skips it: the lock the first took keeps the workers from sleeping past the commit
    await producer.query(`INSERT INTO leasehold.task (name, payload) VALUES ('wake.again', '{"kind":"late"}')`);
    let late = 0;
    for (const w of workers) w.on('task:succeeded', (e) => void ((e.task.payload as { kind: string }).kind === 'late' && late++));
    await producer.query('COMMIT');
    // a lost wake-up would leave them for NEVER_POLL
    await waitUntil('both late tasks succeed', async () => late === 2, WAKE_DEADLINE_MS);
    await Promise.all(workers.map((w) => w.stop()));
  });

  it('concurrent producers with transactions of every length while workers go idle and wake: every task starts in time', async () => {
    const started = new Map<number, number>();
    const quick = defineTask<{ n: number }>('wake.quick', { handler: (p) => void started.set(p.n, Date.now()) });
    const workers: LeaseWorker<unknown>[] = [0, 1, 2].map(
      (i) => track(createWorker({ pool: t.pool, tasks: [quick], concurrency: 2 + i, pollInterval: NEVER_POLL })) as LeaseWorker<unknown>,
    );
    await Promise.all(workers.map((w) => w.start()));
    const committed = new Map<number, number>();
    let next = 0;
    async function producer(seed: number): Promise<void> {
      const client = await t.client();
      for (let burst = 0; burst < 12; burst++) {
        const n = next++;
        await client.query('BEGIN');
        await client.query(`INSERT INTO leasehold.task (name, payload) VALUES ('wake.quick', json_build_object('n', $1::int))`, [n]);
        // some transactions stay open while the workers drain and arm; some commit at once
        const open = [0, 1, 5, 40, 250][(seed + burst) % 5]!;
        if (open > 0) await new Promise((r) => setTimeout(r, open));
        await client.query('COMMIT');
        committed.set(n, Date.now());
        // gaps long enough that the workers go idle, announce, and sleep between bursts
        await new Promise((r) => setTimeout(r, [0, 30, 400, 3_500][(seed * 7 + burst) % 4]));
      }
    }
    await Promise.all([0, 1, 2, 3, 4, 5].map((seed) => producer(seed)));
    await waitUntil(`all ${committed.size} tasks started`, async () => started.size === committed.size);
    const lags = [...committed].map(([n, at]) => started.get(n)! - at).sort((a, b) => a - b);
    console.log(`[wake] ${lags.length} tasks, start - commit: p50 ${lags[lags.length >> 1]} ms, max ${lags.at(-1)} ms`);
    await Promise.all(workers.map((w) => w.stop()));
  });

  it('the outbox dispatcher sleeps the same way: an event added while it is idle is published at once', async () => {
    const { createDispatcher, createOutbox, migrate } = await import('@leasehold/outbox');
    await migrate(t.pool);
    const published: string[] = [];
    const outbox = createOutbox();
    const dispatcher = createDispatcher({
      pool: t.pool,
      publisher: { publish: async (m) => void published.push(m.eventType) },
      pollInterval: NEVER_POLL,
    });
    await dispatcher.start();
    try {
      await waitUntil('the idle dispatcher announces it may sleep', async () => {
        const r = await sql<{ until: string }>`SELECT coalesce(pg_sequence_last_value('leasehold.outbox_wake'), 0)::text AS until`.execute(t.db);
        return Number(r.rows[0]!.until) > (await serverNow(t.db));
      });
      await outbox.add(t.db, { aggregateType: 'order', aggregateId: '1', eventType: 'order.paid', payload: {} });
      await waitUntil('the event is published', async () => published.length === 1);
    } finally {
      await dispatcher.stop();
    }
  });
  it('a worker that cannot announce itself (its arm fails) claims again within a second instead of sleeping its poll interval', async () => {
    // a role that may do everything a worker does but move the wake sequence: every arm fails
    const role = `wake_arm_${process.pid}_${Date.now()}`;
    await t.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'arm'`);
    const pool = new pg.Pool({ connectionString: Object.assign(new URL(t.url), { username: role, password: 'arm' }).toString(), max: 4 });
    pool.on('error', () => undefined);
    try {
      await t.pool.query(`GRANT USAGE ON SCHEMA leasehold TO ${role}`);
      await t.pool.query(`GRANT ALL ON ALL TABLES IN SCHEMA leasehold TO ${role}`);
      await t.pool.query(`GRANT ALL ON ALL SEQUENCES IN SCHEMA leasehold TO ${role}`);
      await t.pool.query(`REVOKE UPDATE ON SEQUENCE leasehold.task_wake FROM ${role}`);
      const ping = defineTask<{ n: number }>('wake.unannounced', { handler: () => undefined });
      const worker = track(createWorker({ pool, tasks: [ping], pollInterval: NEVER_POLL, logger: null }));
      const armFailed = nextEvent(worker, 'worker:error', ({ error }) => /permission denied/.test(error.message), WAKE_DEADLINE_MS);
      await worker.start();
      await armFailed;
      // the producer sees no live announcement and sends no NOTIFY: only a claim of the worker's own finds it
      await waitUntil('no announcement is live', async () => (await wakeUntil(t.db)) <= (await serverNow(t.db)));
      const succeeded = nextEvent(worker, 'task:succeeded', () => true, WAKE_DEADLINE_MS);
      await enqueue(t.pool, ping, { n: 1 });
      await succeeded;
      await worker.stop();
    } finally {
      await pool.end();
      await t.pool.query(`DROP OWNED BY ${role}`);
      await t.pool.query(`DROP ROLE ${role}`);
    }
  });
});
