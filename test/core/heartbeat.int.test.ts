import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, LeaseLostError, markDone } from '@leasehold/core';
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
});
