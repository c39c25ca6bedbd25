// The worker's lifecycle where it used to hang or leak (issue #11 items 4, 5, 6, 9b): a pool of
// one or two connections, stop() while the database does not answer, stop() during start(), and
// the LISTEN connection's listeners across starts. A frozen database is played by a proxy that
// stops forwarding (test/core/freezable-proxy.ts); frozen-stop.int.test.ts freezes a real server.
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createLeaseWorker,
  createWorker,
  defineTask,
  enqueue,
  taskTable,
  type LeaseWorker,
  type TaskRow,
  type WorkerLogger,
} from '@leasehold/core';
import { readTask, useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { startFreezableProxy, type FreezableProxy } from './freezable-proxy.js';

const t = useTestDatabase();
const track = useWorkers();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function pool(options: pg.PoolConfig = {}): pg.Pool {
  const p = new pg.Pool({ connectionString: t.url, ...options });
  p.on('error', () => undefined);
  cleanups.push(() => p.end().catch(() => undefined));
  return p;
}

async function proxy(): Promise<FreezableProxy> {
  const p = await startFreezableProxy(t.url);
  cleanups.push(() => p.close());
  return p;
}

/** Timers and sockets keeping this process alive, as a sorted list of their kinds. */
function liveHandles(): string[] {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout' || kind === 'TCPSocketWrap').sort();
}

/**
 * Waits until the process holds no more timers and sockets of each kind than `before` (the test
 * database's own pool may close idle connections meanwhile, never open any: tests do not use it
 * in between). Polls on unref'd timers, which do not count.
 */
async function handlesBackTo(before: string[], deadlineMs = 2_000): Promise<void> {
  const excess = () => {
    const left = [...before];
    return liveHandles().filter((kind) => {
      const i = left.indexOf(kind);
      if (i === -1) return true;
      left.splice(i, 1);
      return false;
    });
  };
  const until = performance.now() + deadlineMs;
  while (excess().length > 0 && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20).unref());
  }
  expect(excess(), 'timers and sockets left behind').toEqual([]);
}

/** Resolves with every call made to a logger's methods. */
function recordingLogger(): WorkerLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (message: string) => void lines.push(`warn ${message}`), error: (message: string) => void lines.push(`error ${message}`) };
}

const CHECKED_OUT = (p: pg.Pool) => p.totalCount - p.idleCount;

describe('a pool of one or two connections', () => {
  for (const max of [1, 2]) {
    it(`createWorker on a pool of max ${max}: LISTEN wakes it, tasks run, stop returns and holds nothing`, async () => {
      const small = pool({ max });
      const ping = defineTask<{ n: number }>(`ping-${max}`, { handler: async () => {} });
      // a 10 s poll: only a working LISTEN connection makes the wake-up quick
      const worker = track(createWorker({ pool: small, tasks: [ping], pollInterval: '10s' }));
      await worker.start();
      await nextEvent(worker, 'worker:idle', () => true, 5_000);
      const committed = performance.now();
      const done = nextEvent(worker, 'task:succeeded', () => true, 5_000);
      const { id } = await enqueue(t.pool, ping, { n: 1 });
      expect((await done).task.id).toBe(id);
      expect(performance.now() - committed).toBeLessThan(1_000);
      for (let n = 2; n <= 20; n++) await enqueue(t.pool, ping, { n });
      await vi.waitFor(async () => {
        const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE name = ${ping.name} AND status = 'done'`.execute(t.db);
        expect(rows[0]!.n).toBe(20);
      }, { timeout: 10_000 });
      await worker.stop({ timeout: '5s' });
      expect(CHECKED_OUT(small)).toBe(0);
      expect(small.totalCount).toBeLessThanOrEqual(max);
    });

    it(`createLeaseWorker on a pool of max ${max}: claims, heartbeats and finalizes share the one connection`, async () => {
      const small = pool({ max });
      const release = gate();
      const name = `lease-${max}`;
      const worker = track(
        createLeaseWorker<TaskRow>({
          pool: small,
          table: taskTable(),
          names: [name],
          lease: '2s',
          heartbeatInterval: 100,
          pollInterval: '10s',
          handle: () => release.wait,
        }),
      );
      const beats = vi.fn();
      worker.on('heartbeat:failed', beats);
      await worker.start();
      const claimed = nextEvent(worker, 'task:claimed', () => true, 5_000);
      const { rows } = await sql<{ id: string }>`INSERT INTO leasehold.task (name, payload) VALUES (${name}, '{}') RETURNING id`.execute(t.db);
      const id = String(rows[0]!.id);
      await claimed;
      // the lease is renewed while the handler runs: lease_until moves
      const first = (await sql<{ u: Date }>`SELECT lease_until AS u FROM leasehold.task WHERE id = ${id}`.execute(t.db)).rows[0]!.u;
      await vi.waitFor(async () => {
        const now = (await sql<{ u: Date }>`SELECT lease_until AS u FROM leasehold.task WHERE id = ${id}`.execute(t.db)).rows[0]!.u;
        expect(now.getTime()).toBeGreaterThan(first.getTime());
      }, { timeout: 5_000 });
      const succeeded = nextEvent(worker, 'task:succeeded', () => true, 5_000);
      release.open();
      await succeeded;
      await worker.stop({ timeout: '5s' });
      expect(beats).not.toHaveBeenCalled();
      expect((await readTask(t.db, id)).status).toBe('done');
      expect(CHECKED_OUT(small)).toBe(0);
    });
  }
});

describe('stop() while the database does not answer', () => {
  it('returns within timeout + 1 s, reports the abandoned tasks (event and log line), and leaves no connection or timer', async () => {
    const frozen = await proxy();
    // a pool gives up on a connection attempt only with connectionTimeoutMillis (pg waits forever
    // otherwise): those attempts are the pool's, started for statements the worker abandoned
    const p = new pg.Pool({ connectionString: frozen.url, max: 4, connectionTimeoutMillis: 300 });
    p.on('error', () => undefined);
    const entered: string[] = [];
    const both = gate();
    const hold = defineTask<object>('frozen-hold', {
      lease: '30s',
      handler: async (_payload, ctx) => {
        entered.push(ctx.task.id);
        if (entered.length === 2) both.open();
        await new Promise(() => undefined); // deaf to its signal, never returns
      },
    });
    const a = await enqueue(t.pool, hold, {});
    const b = await enqueue(t.pool, hold, {});
    const before = liveHandles();
    const logger = recordingLogger();
    const worker = track(createWorker({ pool: p, tasks: [hold], concurrency: 2, pollInterval: 50, heartbeatInterval: 100, logger }));
    const abandoned = nextEvent(worker, 'worker:abandoned', () => true, 10_000);
    const started = nextEvent(worker, 'worker:started');
    await worker.start();
    await started;
    await both.wait;
    frozen.freeze();

    const stopAt = performance.now();
    await worker.stop({ timeout: 300 });
    const tookMs = performance.now() - stopAt;
    expect(tookMs).toBeGreaterThanOrEqual(300);
    expect(tookMs).toBeLessThan(300 + 1_000);

    const report = await abandoned;
    expect(report.tasks.map((task) => task.id).sort()).toEqual([a.id, b.id].sort());
    expect(report.connections).toBeGreaterThan(0);
    const warned = logger.lines.filter((line) => line.includes('abandoned'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(`ids ${[a.id, b.id].sort((x, y) => Number(x) - Number(y)).join(', ')}`);
    // nothing of the worker's is checked out of the pool or waiting for it
    await vi.waitFor(() => expect(CHECKED_OUT(p)).toBe(0), { timeout: 1_500 });
    expect(p.waitingCount).toBe(0);

    await p.end();
    await frozen.close();
    cleanups.pop();
    await handlesBackTo(before);
    // the unwritten tasks are still ours in the database: they come back when the lease expires
    for (const id of [a.id, b.id]) expect(await readTask(t.db, id)).toMatchObject({ status: 'processing', leaseVersion: 1 });
  });

  it('abandons nothing when the database answers: released tasks are written, and no abandon is reported', async () => {
    const endless = defineTask<object>('answered-hold', { handler: (_p, ctx) => new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error))) });
    const { id } = await enqueue(t.pool, endless, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [endless], pollInterval: 50, logger: null }));
    const abandoned = vi.fn();
    worker.on('worker:abandoned', abandoned);
    const claimed = nextEvent(worker, 'task:claimed');
    await worker.start();
    await claimed;
    await worker.stop({ timeout: 0 });
    expect(abandoned).not.toHaveBeenCalled();
    expect(await readTask(t.db, id)).toMatchObject({ status: 'pending', attempts: 0 });
  });
});

describe('stop() during start()', () => {
  it('stop() right after start(): no worker:started, both resolve, no timer or connection left', async () => {
    const before = liveHandles();
    const p = new pg.Pool({ connectionString: t.url, max: 2 });
    const noop = defineTask<object>('start-stop', { handler: async () => {} });
    const worker = track(createWorker({ pool: p, tasks: [noop], heartbeatInterval: 50 }));
    const started = vi.fn();
    worker.on('worker:started', started);
    const starting = worker.start();
    const stopping = worker.stop();
    await Promise.all([starting, stopping]);
    expect(started).not.toHaveBeenCalled();
    await p.end();
    await handlesBackTo(before);
    expect(started).not.toHaveBeenCalled();
  });

  it('stop() while the LISTEN connection is still connecting: its attempt is cut, no worker:started, no handle left', async () => {
    const before = liveHandles();
    const link = await proxy();
    const p = new pg.Pool({ connectionString: link.url, max: 1 });
    p.on('error', () => undefined);
    await p.query('SELECT 1'); // one working pooled connection
    link.freezeNew(); // the next connection (the listener's) is never answered
    const noop = defineTask<object>('start-during-connect', { handler: async () => {} });
    const worker = track(createWorker({ pool: p, tasks: [noop], heartbeatInterval: 50 }));
    const started = vi.fn();
    worker.on('worker:started', started);
    const held = link.nextHeld();
    const starting = worker.start();
    const socket = await held; // the LISTEN connection is connecting now
    const cut = new Promise((resolve) => socket.once('close', resolve));
    const stopAt = performance.now();
    await worker.stop({ timeout: '10s' });
    await starting;
    expect(performance.now() - stopAt).toBeLessThan(1_000);
    await cut; // the worker closed its connection attempt
    expect(started).not.toHaveBeenCalled();
    await p.end();
    await link.close();
    cleanups.pop();
    await handlesBackTo(before);
    expect(started).not.toHaveBeenCalled();
  });
});

describe('the LISTEN connection across starts', () => {
  it('adds no listener to pooled clients: 15 start/stop cycles on a one-connection pool raise no MaxListenersExceededWarning', async () => {
    const p = pool({ max: 1 });
    const clients: pg.PoolClient[] = [];
    p.on('connect', (client) => void clients.push(client));
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const noop = defineTask<object>('cycles', { handler: async () => {} });
      for (let i = 0; i < 15; i++) {
        const worker: LeaseWorker<TaskRow> = track(createWorker({ pool: p, tasks: [noop], pollInterval: '10s' }));
        await worker.start();
        await nextEvent(worker, 'worker:idle', () => true, 5_000);
        await worker.stop();
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect(clients.length).toBeGreaterThan(0);
      for (const client of clients) expect(client.listenerCount('error')).toBeLessThanOrEqual(1);
      for (const client of clients) expect(client.listenerCount('notification')).toBe(0);
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
