import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  createWorker,
  defineTask,
  enqueue,
  HandlerTimeoutError,
  isLeaseholdError,
  LeaseLostError,
  markDone,
  PermanentError,
  ShutdownError,
} from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

function abortedWith(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

describe('the worker', () => {
  it('starts a task within 1 s of its commit with a 10 s poll interval (LISTEN/NOTIFY)', async () => {
    const started: number[] = [];
    const ping = defineTask<{ at: number }>('ping', { handler: async () => void started.push(performance.now()) });
    const worker = track(createWorker({ pool: t.pool, tasks: [ping], pollInterval: '10s' }));
    await worker.start();
    await nextEvent(worker, 'worker:idle');
    const committed = performance.now();
    const done = nextEvent(worker, 'task:succeeded');
    await enqueue(t.pool, ping, { at: committed });
    await done;
    expect(started[0]! - committed).toBeLessThan(1_000);
    await worker.stop();
  });

  it('re-LISTENs after its connection is killed, and still wakes within 1 s', async () => {
    const pong = defineTask<object>('pong', { handler: async () => {} });
    const pool = new pg.Pool({ connectionString: t.url, max: 4, application_name: 'relisten-test' });
    pool.on('error', () => undefined); // idle clients die with the killed backend's siblings
    const worker = track(createWorker({ pool, tasks: [pong], pollInterval: '10s' }));
    const errors: Error[] = [];
    worker.on('worker:error', ({ error }) => void errors.push(error));
    await worker.start();
    // The listener's session is the one whose last statement is its LISTEN or a claim: the worker
    // sends its claims, and its sleep announcement, on the LISTEN connection while it is up, and
    // through its pool only while it is not (before the kill, none; after it, the pool's sessions
    // started before the kill). The pid is taken from the read that found the one session: its last
    // statement may change between two reads.
    const listenerSessions = (since: Date) => sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
      WHERE application_name = 'relisten-test' AND backend_start > ${since}
        AND (query ILIKE 'LISTEN%' OR query LIKE '%ready AS (%' OR query LIKE '%leasehold:wake%')`.execute(t.db);
    let listenerPid: number | undefined;
    await expect
      .poll(async () => {
        const { rows } = await listenerSessions(new Date(0));
        listenerPid = rows.length === 1 ? rows[0]!.pid : undefined;
        return rows.length;
      }, { timeout: 5_000 })
      .toBe(1);
    const killedAt = (await sql<{ at: Date }>`SELECT clock_timestamp() AS at`.execute(t.db)).rows[0]!.at;
    await sql`SELECT pg_terminate_backend(${listenerPid!}::int)`.execute(t.db);
    await expect.poll(() => errors.length, { timeout: 5_000 }).toBeGreaterThan(0);
    // wait until the listener is back, on a new session
    await expect.poll(async () => (await listenerSessions(killedAt)).rows.length, { timeout: 10_000 }).toBe(1);
    const committed = performance.now();
    const done = nextEvent(worker, 'task:succeeded');
    await enqueue(t.pool, pong, {});
    await done;
    expect(performance.now() - committed).toBeLessThan(1_000);
    await worker.stop();
    await pool.end();
  });

  it('keeps at most `concurrency` handlers running and claims only free slots', async () => {
    let running = 0;
    let peak = 0;
    const release = gate();
    const slow = defineTask<object>('slow', {
      handler: async () => {
        running++;
        peak = Math.max(peak, running);
        await release.wait;
        running--;
      },
    });
    for (let i = 0; i < 10; i++) await enqueue(t.pool, slow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [slow], concurrency: 3, pollInterval: 50 }));
    await worker.start();
    await expect.poll(() => running).toBe(3);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE name = 'slow' AND status = 'processing'`.execute(t.db);
    expect(rows[0]?.n).toBe('3'); // claimed no more than it can run
    release.open();
    await expect.poll(async () => (await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE name = 'slow' AND status = 'done'`.execute(t.db)).rows[0]?.n).toBe('10');
    expect(peak).toBe(3);
    await worker.stop();
  });

  it('with `prefetch`, keeps that many claimed tasks ready beyond the running ones, and gives them back on stop', async () => {
    const release = gate();
    const buffered = defineTask<object>('buffered', { handler: async () => release.wait });
    const ids = [];
    for (let i = 0; i < 10; i++) ids.push((await enqueue(t.pool, buffered, {})).id);
    const worker = track(createWorker({ pool: t.pool, tasks: [buffered], concurrency: 3, prefetch: 2, pollInterval: 50 }));
    await worker.start();
    await expect.poll(() => worker.inFlightCount).toBe(5);
    expect(worker.runningCount).toBe(3);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE name = 'buffered' AND status = 'processing'`.execute(t.db);
    expect(rows[0]?.n).toBe('5');
    const stopping = worker.stop({ timeout: '5s' });
    release.open();
    await stopping;
    const { rows: after } = await sql<{ status: string; attempts: number; n: string }>`
      SELECT status, attempts, count(*) AS n FROM leasehold.task WHERE name = 'buffered' GROUP BY 1, 2 ORDER BY 1`.execute(t.db);
    // the 3 running finished; the 2 buffered never started and went back with their attempt refunded
    expect(after).toEqual([
      { status: 'done', attempts: 1, n: '3' },
      { status: 'pending', attempts: 0, n: '7' },
    ]);
  });

  it('runs ordered tasks of one group one at a time, in order, each claimed as soon as the previous is written', async () => {
    const order: number[] = [];
    let running = 0;
    const step = defineTask<{ n: number }>('ordered-step', {
      ordered: true,
      handler: async ({ n }) => {
        running++;
        expect(running).toBe(1);
        order.push(n);
        await new Promise((r) => setImmediate(r));
        running--;
      },
    });
    // a 10 s poll: only the wake-up after each fenced write can make this quick
    const worker = track(createWorker({ pool: t.pool, tasks: [step], concurrency: 4, pollInterval: '10s' }));
    await worker.start();
    await nextEvent(worker, 'worker:idle');
    const last = await t.db.transaction().execute(async (trx) => {
      let id = '';
      for (let n = 1; n <= 6; n++) id = (await enqueue(trx, step, { n }, { groupKey: 'cart-1' })).id;
      return id;
    });
    await nextEvent(worker, 'task:succeeded', ({ task }) => task.id === last, 5_000);
    expect(order).toEqual([1, 2, 3, 4, 5, 6]);
    await worker.stop();
  });

  it('claims only the task names it has handlers for', async () => {
    const mine = defineTask<object>('mine', { handler: async () => {} });
    const theirs = defineTask<object>('theirs', { handler: async () => {} });
    const other = await enqueue(t.pool, theirs, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [mine], pollInterval: 50 }));
    await worker.start();
    const done = nextEvent(worker, 'task:succeeded');
    await enqueue(t.pool, mine, {});
    await done;
    expect((await readTask(t.db, other.id)).status).toBe('pending');
    await worker.stop();
  });

  it('classifies outcomes: permanent → dead, retryable → retrying with backoff, invalid payload → dead', async () => {
    const failing = defineTask<{ kind: string }>('failing', {
      backoff: { base: '10s', cap: '10s' },
      validate: {
        parse(input: unknown) {
          if (typeof (input as { kind?: unknown }).kind !== 'string') throw new Error('kind missing');
          return input as { kind: string };
        },
      },
      handler: async ({ kind }) => {
        if (kind === 'permanent') throw new PermanentError('no such account');
        throw new Error('flaky');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [failing], pollInterval: 50 }));
    const dead = nextEvent(worker, 'task:dead', ({ error }) => error.message.includes('no such account'));
    const retrying = nextEvent(worker, 'task:retrying');
    await enqueue(t.pool, failing, { kind: 'permanent' });
    await enqueue(t.pool, failing, { kind: 'flaky' });
    // a row whose payload no longer passes the validator (written by an older producer)
    const { rows } = await sql<{ id: string }>`INSERT INTO leasehold.task (name, payload) VALUES ('failing', '{"old": true}') RETURNING id`.execute(t.db);
    const invalid = nextEvent(worker, 'task:dead', ({ task }) => task.id === String(rows[0]!.id));
    await worker.start();
    await dead;
    const r = await retrying;
    expect(r.error.message).toBe('flaky');
    expect(r.delayMs).toBeLessThan(10_000);
    expect((await invalid).error.message).toContain('kind missing');
    await worker.stop();
  });

  it('a handler timeout aborts the signal and counts as a retryable failure', async () => {
    let reason: unknown;
    const stuck = defineTask<object>('stuck', {
      lease: '5s',
      handlerTimeout: 100,
      handler: async (_payload, ctx) => {
        reason = await abortedWith(ctx.signal);
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [stuck], pollInterval: 50 }));
    const retrying = nextEvent(worker, 'task:retrying');
    await enqueue(t.pool, stuck, {});
    await worker.start();
    const r = await retrying;
    expect(reason).toBeInstanceOf(HandlerTimeoutError);
    expect(isLeaseholdError(r.error, 'HANDLER_TIMEOUT')).toBe(true);
    expect(await readTask(t.db, r.task.id)).toMatchObject({ status: 'pending', attempts: 1 });
    await worker.stop();
  });

  it('a listener that throws does not break the loop', async () => {
    const ok = defineTask<object>('ok', { handler: async () => {} });
    const worker = track(createWorker({ pool: t.pool, tasks: [ok], pollInterval: 50 }));
    worker.on('task:claimed', () => {
      throw new Error('bad listener');
    });
    const reported = nextEvent(worker, 'worker:error', ({ error }) => error.message === 'bad listener');
    await worker.start();
    const first = nextEvent(worker, 'task:succeeded');
    await enqueue(t.pool, ok, {});
    await first;
    await reported;
    const second = nextEvent(worker, 'task:succeeded');
    await enqueue(t.pool, ok, {});
    await second;
    await worker.stop();
  });

  it('follow-up tasks commit with the completion, and only with it', async () => {
    const next = defineTask<{ from: string }>('follow-up', { handler: async () => {} });
    const parent = defineTask<{ fail: boolean }>('parent', {
      maxAttempts: 1,
      handler: async ({ fail }, ctx) => {
        ctx.enqueue(next, { from: ctx.task.id });
        if (fail) throw new Error('parent failed');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [parent], pollInterval: 50 }));
    await worker.start();
    const ok = await enqueue(t.pool, parent, { fail: false });
    const bad = await enqueue(t.pool, parent, { fail: true });
    await expect.poll(async () => (await readTask(t.db, bad.id)).status).toBe('dead');
    await expect.poll(async () => (await readTask(t.db, ok.id)).status).toBe('done');
    const { rows } = await sql<{ payload: { from: string } }>`SELECT payload FROM leasehold.task WHERE name = 'follow-up'`.execute(t.db);
    expect(rows.map((r) => r.payload.from)).toEqual([ok.id]);
    await worker.stop();
  });

  it('stop(): finished tasks are done, aborted ones pending with the attempt refunded, no connection left', async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 5 });
    const quickGate = gate();
    const seen: unknown[] = [];
    const quick = defineTask<object>('quick', { handler: async () => quickGate.wait });
    const endless = defineTask<object>('endless', {
      handler: async (_payload, ctx) => {
        seen.push(await abortedWith(ctx.signal));
      },
    });
    const q = await enqueue(t.pool, quick, {});
    const e = await enqueue(t.pool, endless, {});
    const worker = track(createWorker({ pool, tasks: [quick, endless], pollInterval: 50 }));
    await worker.start();
    await expect.poll(() => worker.inFlightCount).toBe(2);
    const released = nextEvent(worker, 'task:released');
    const stopping = worker.stop({ timeout: 300 });
    quickGate.open(); // finishes during the drain
    await stopping;
    expect((await released).task.id).toBe(e.id);
    expect(seen[0]).toBeInstanceOf(ShutdownError);
    expect(await readTask(t.db, q.id)).toMatchObject({ status: 'done', attempts: 1 });
    expect(await readTask(t.db, e.id)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(pool.totalCount - pool.idleCount).toBe(0); // nothing checked out: LISTEN connection returned
    await worker.stop(); // idempotent
    await pool.end();
  });

  it('stop() before start() and twice is safe', async () => {
    const noop = defineTask<object>('noop', { handler: async () => {} });
    const worker = createWorker({ pool: t.pool, tasks: [noop] });
    await worker.stop();
    await worker.stop();
    // a stopped worker starts no more (test/core/worker-state.int.test.ts has the message)
    await expect(worker.start()).rejects.toMatchObject({ code: 'WORKER_STATE' });
  });

  it('a lost lease aborts the handler with LeaseLostError and writes nothing', async () => {
    const started = gate();
    let reason: unknown;
    const longOne = defineTask<object>('long-one', {
      lease: '30s',
      handler: async (_payload, ctx) => {
        started.open();
        reason = await abortedWith(ctx.signal);
      },
    });
    const warnings: string[] = [];
    const logger = { warn: (message: string) => void warnings.push(message), error: () => undefined };
    const worker = track(createWorker({ pool: t.pool, tasks: [longOne], pollInterval: 50, heartbeatInterval: 50, logger }));
    const { id } = await enqueue(t.pool, longOne, {});
    await worker.start();
    await started.wait;
    // another claim took over (as after an expiry): the fencing token moved on
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${id}`.execute(t.db);
    const lost = await nextEvent(worker, 'task:lease-lost');
    expect(lost.task.id).toBe(id);
    await expect.poll(() => reason).toBeInstanceOf(LeaseLostError);
    expect(await markDone(t.pool, { id, leaseVersion: lost.task.leaseVersion })).toBe(false);
    expect((await readTask(t.db, id)).status).toBe('processing');
    expect(warnings).toEqual([expect.stringContaining(`lost lease: lease lost on task ${id}`)]); // logged, not only emitted
    await worker.stop();
  });
});
