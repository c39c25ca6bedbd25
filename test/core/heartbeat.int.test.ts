import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, enqueueMany, LeaseLostError, markDone, taskTable } from '@leasehold/core';
import { leaseClaim, leaseExtendMany } from '@leasehold/core/internal';
import { readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

describe('heartbeat', () => {
  it('a task running longer than 3× its lease completes exactly once; no other worker claims it meanwhile', async () => {
    const runs: string[] = [];
    const lease = 300;
    const long = defineTask<object>('long', {
      lease,
      handler: async (_payload, ctx) => {
        runs.push(ctx.task.id);
        // the work itself: ~4 leases long
        await new Promise((r) => setTimeout(r, lease * 4));
      },
    });
    const a = track(createWorker({ pool: t.pool, tasks: [long], owner: 'A', pollInterval: 25 }));
    const b = track(createWorker({ pool: t.pool, tasks: [long], owner: 'B', pollInterval: 25 }));
    const claims: string[] = [];
    const extendedUntil: Date[] = [];
    for (const w of [a, b]) w.on('task:claimed', ({ task }) => void claims.push(`${w.owner}:${task.id}`));
    const lost: string[] = [];
    for (const w of [a, b]) w.on('task:lease-lost', ({ task }) => void lost.push(task.id));
    await a.start();
    const { id } = await enqueue(t.pool, long, {});
    await expect.poll(() => claims.length).toBe(1);
    await b.start();
    // watch the lease move forward while the handler runs
    const watcher = setInterval(() => {
      void sql<{ lease_until: Date }>`SELECT lease_until FROM leasehold.task WHERE id = ${id}`
        .execute(t.db)
        .then(({ rows }) => rows[0]?.lease_until && extendedUntil.push(rows[0].lease_until));
    }, lease / 2);
    await nextEvent(a, 'task:succeeded', ({ task }) => task.id === id);
    clearInterval(watcher);
    expect(runs).toEqual([id]);
    expect(claims).toEqual([`A:${id}`]);
    expect(lost).toEqual([]);
    expect(await readTask(t.db, id)).toMatchObject({ status: 'done', attempts: 1, leaseVersion: 1 });
    const distinct = new Set(extendedUntil.map((d) => d.getTime()));
    expect(distinct.size).toBeGreaterThanOrEqual(3); // extended again and again
    await Promise.all([a.stop(), b.stop()]);
  });

  it('a worker whose heartbeat is blocked loses the lease: its handler is aborted, its finalize refused, and the task completes once through another worker', async () => {
    // A's pool has one connection; its handler holds it, so A's heartbeat cannot run
    const poolA = new pg.Pool({ connectionString: t.url, max: 1 });
    const effects: string[] = [];
    let aReason: unknown;
    let bClaimed!: () => void;
    const bHasIt = new Promise<void>((resolve) => (bClaimed = resolve));
    const job = defineTask<object>('blocked-heartbeat', {
      lease: 300,
      handler: async (_payload, ctx) => {
        if (ctx.task.leaseVersion === 1) {
          const held = await poolA.connect();
          await bHasIt; // the lease expires meanwhile and B takes over
          held.release();
          aReason = await new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(ctx.signal.reason), { once: true }));
          return;
        }
        effects.push(`${ctx.task.id}@${ctx.task.leaseVersion}`);
      },
    });
    const a = track(createWorker({ pool: poolA, tasks: [job], owner: 'A', pollInterval: '10s', listen: false }));
    const { id } = await enqueue(t.pool, job, {});
    const aLost = nextEvent(a, 'task:lease-lost');
    await a.start();
    await expect.poll(async () => (await readTask(t.db, id)).leaseOwner).toBe('A');
    const b = track(createWorker({ pool: t.pool, tasks: [job], owner: 'B', pollInterval: 25 }));
    b.on('task:claimed', () => bClaimed());
    const bDone = nextEvent(b, 'task:succeeded');
    await b.start();
    await bDone;
    const lost = await aLost;
    expect(lost.task.leaseVersion).toBe(1);
    await expect.poll(() => aReason).toBeInstanceOf(LeaseLostError);
    expect(await markDone(t.pool, { id, leaseVersion: 1 })).toBe(false); // A's token is stale
    expect(effects).toEqual([`${id}@2`]);
    expect(await readTask(t.db, id)).toMatchObject({ status: 'done', leaseVersion: 2, attempts: 2 });
    await Promise.all([a.stop(), b.stop()]);
    await poolA.end();
  });

  it('issues one heartbeat statement per tick for all in-flight tasks', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const held = defineTask<object>('held', { lease: 600, handler: async () => hold });
    for (let i = 0; i < 20; i++) await enqueue(t.pool, held, {});
    // count statements the worker's pool sends while all 20 tasks are in flight
    const pool = new pg.Pool({ connectionString: t.url, max: 4 });
    const statements: { text: string; values: unknown[] }[] = [];
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
      const config = args[0] as { text?: string; values?: unknown[] };
      statements.push({ text: String(config?.text ?? args[0]), values: config?.values ?? (args[1] as unknown[]) ?? [] });
      return query(...args);
    };
    const worker = track(createWorker({ pool, tasks: [held], concurrency: 20, pollInterval: '10s', heartbeatInterval: 100 }));
    await worker.start();
    await expect.poll(() => worker.inFlightCount).toBe(20);
    statements.length = 0;
    const beats = () => statements.filter((s) => s.text.includes('SET lease_until'));
    await expect.poll(() => beats().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(5);
    expect(statements.length).toBe(beats().length); // nothing else: no per-task statements
    // every task, one statement: the ids go as one bigint[] literal, `{1,2,…}`
    for (const beat of beats()) expect(String(beat.values[0]).slice(1, -1).split(',').length).toBe(20);
    release();
    await worker.stop();
    await pool.end();
  });

  it('never waits for a row lock: a row another transaction holds is answered busy, the rest extended, a moved token lost', async () => {
    const table = taskTable();
    const work = defineTask<{ i: number }>('busy-rows', { handler: () => {} });
    await enqueueMany(t.pool, work, [0, 1, 2].map((i) => ({ payload: { i } })));
    const { claimed } = await leaseClaim(t.pool, table, { owner: 'me', batch: 3, leaseMs: 60_000 });
    const [low, mid, high] = [...claimed].sort((a, b) => Number(a.id) - Number(b.id));
    // the high row's token moves on, as a takeover would move it
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${high!.id}`.execute(t.db);
    // another transaction holds the middle row, as this worker's own fenced write of it would
    const holder = await t.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM leasehold.task WHERE id = $1 FOR UPDATE', [mid!.id]);
      const heartbeat = await t.pool.connect();
      try {
        // without the pass-over the statement waits here for the holder; the timeout makes that an error
        await heartbeat.query(`SET lock_timeout = '5s'`);
        const items = [low!, mid!, high!].map((c) => ({ id: c.id, leaseVersion: c.leaseVersion, leaseMs: 120_000 }));
        const answer = await leaseExtendMany(heartbeat, table, items, { skipLocked: true });
        expect(answer.get(`${low!.id}@${low!.leaseVersion}`)).toBeInstanceOf(Date);
        expect(answer.has(`${mid!.id}@${mid!.leaseVersion}`)).toBe(true);
        expect(answer.get(`${mid!.id}@${mid!.leaseVersion}`)).toBeNull();
        expect(answer.has(`${high!.id}@${high!.leaseVersion}`)).toBe(false);
      } finally {
        heartbeat.release(true);
      }
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('keeps extending the other running tasks while another transaction holds one task’s row, and loses none', async () => {
    // A worker's own fenced write locks its rows in the order its plan reaches them, not by id; a
    // heartbeat that waited for such a row deadlocked with the write, or, here, stalls every lease.
    const lease = 1_000;
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const held = defineTask<{ i: number }>('held-beside-lock', { lease, handler: async () => hold });
    const ids = (await enqueueMany(t.pool, held, [0, 1].map((i) => ({ payload: { i } })))).map((r) => r.id);
    const worker = track(createWorker({ pool: t.pool, tasks: [held], concurrency: 2, pollInterval: '10s' }));
    const lost: string[] = [];
    worker.on('task:lease-lost', ({ task }) => void lost.push(task.id));
    await worker.start();
    await expect.poll(() => worker.inFlightCount).toBe(2);
    const leaseOf = async (id: string) =>
      (await sql<{ until: number }>`SELECT extract(epoch FROM lease_until) * 1000 AS until FROM leasehold.task WHERE id = ${id}`.execute(t.db)).rows[0]!.until;
    const holder = await t.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM leasehold.task WHERE id = $1 FOR UPDATE', [ids[0]]);
      const { rows } = await holder.query<{ now: number }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS now');
      const lockedAt = Number(rows[0]!.now);
      // the other task's lease is extended by a heartbeat that started after the lock was taken
      await expect.poll(async () => Number(await leaseOf(ids[1]!)) > lockedAt + lease, { timeout: 10 * lease }).toBe(true);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    release();
    await expect.poll(async () => (await readTask(t.db, ids[0]!)).status).toBe('done');
    await expect.poll(async () => (await readTask(t.db, ids[1]!)).status).toBe('done');
    expect(lost).toEqual([]);
    await worker.stop();
  });
});
