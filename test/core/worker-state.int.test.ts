// Issue 34 item 6: start() on a worker, scheduler or dispatcher that was started before is a coded
// WorkerStateError (it was a plain Error without a code), and the start check's bound is the
// `startTimeout` option (it was a fixed 10 s: workers on a saturated machine exited at start).
import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createScheduler,
  createWorker,
  DatabaseNotReadyError,
  defineSchedule,
  defineTask,
  isLeaseholdError,
  WorkerStateError,
} from '@leasehold/core';
import { createDispatcher } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent } from '../workers.js';

const t = useTestDatabase();
const noop = defineTask<object>('worker-state', { handler: async () => {} });
const publisher = { publish: async () => {} };

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f().catch(() => undefined)));
});

async function expectStateError(start: Promise<void>, kind: string, state: WorkerStateError['state']): Promise<void> {
  const error = await start.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkerStateError);
  expect(isLeaseholdError(error, 'WORKER_STATE')).toBe(true);
  expect(error).toMatchObject({ code: 'WORKER_STATE', kind, state });
  expect((error as Error).message).toMatch(state === 'running' ? /was already started$/ : /was stopped: a \w+ starts once; create a new one to start again$/);
}

describe('start() again is a WorkerStateError', () => {
  it('a worker: twice while running, and after stop(); it claims nothing more', async () => {
    const worker = createWorker({ pool: t.pool, tasks: [noop], logger: null });
    cleanup.push(() => worker.stop({ timeout: 0 }));
    await worker.start();
    await expectStateError(worker.start(), 'worker', 'running');
    await worker.stop();
    let started = false;
    worker.on('worker:started', () => (started = true));
    await expectStateError(worker.start(), 'worker', 'stopped');
    expect(started).toBe(false);
  });

  it('a worker stopped before it ever started', async () => {
    const worker = createWorker({ pool: t.pool, tasks: [noop], logger: null });
    await worker.stop();
    await expectStateError(worker.start(), 'worker', 'stopped');
  });

  it('a scheduler, and the outbox dispatcher (a lease worker)', async () => {
    const every = defineSchedule('worker-state-every', noop, { cron: '0 0 1 1 *', payload: {} });
    const scheduler = createScheduler({ pool: t.pool, schedules: [every], logger: null });
    cleanup.push(() => scheduler.stop({ timeout: 0 }));
    await scheduler.start();
    await expectStateError(scheduler.start(), 'scheduler', 'running');
    await scheduler.stop();
    await expectStateError(scheduler.start(), 'scheduler', 'stopped');

    const dispatcher = createDispatcher({ pool: t.pool, publisher, logger: null });
    cleanup.push(() => dispatcher.stop({ timeout: 0 }));
    const started = nextEvent(dispatcher, 'worker:started');
    await dispatcher.start();
    await started;
    await dispatcher.stop();
    await expectStateError(dispatcher.start(), 'worker', 'stopped');
  });
});

/** A server that accepts connections and never answers: a database too busy to reply. */
async function silentServer(): Promise<{ url: string; server: Server }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = new URL(t.url);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return { url: url.toString(), server };
}

function silentPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  cleanup.push(() => pool.end());
  return pool;
}

describe('startTimeout bounds the start check', () => {
  it('a database that never answers: unreachable after startTimeout, naming it; the worker (and dispatcher) can start again later', async () => {
    const { url } = await silentServer();
    const worker = createWorker({ pool: silentPool(url), tasks: [noop], logger: null, listen: false, startTimeout: '300ms' });
    cleanup.push(() => worker.stop({ timeout: 0 }));
    const began = performance.now();
    const error = await worker.start().catch((e: unknown) => e);
    const tookMs = performance.now() - began;
    expect(error).toBeInstanceOf(DatabaseNotReadyError);
    expect(error).toMatchObject({ reason: 'unreachable' });
    expect((error as Error).message).toMatch(/: no answer within 0\.3 s \(the worker's `startTimeout`\)$/);
    // the bound is the option's, not the default 10 s
    expect(tookMs).toBeGreaterThanOrEqual(290);
    expect(tookMs).toBeLessThan(5_000);
    // refused, not started: no WorkerStateError on the next try
    expect(await worker.start().catch((e: unknown) => e)).toBeInstanceOf(DatabaseNotReadyError);

    const dispatcher = createDispatcher({ pool: silentPool(url), publisher, logger: null, listen: false, startTimeout: '200ms' });
    cleanup.push(() => dispatcher.stop({ timeout: 0 }));
    expect(await dispatcher.start().catch((e: unknown) => (e as Error).message)).toMatch(/no answer within 0\.2 s/);
  });

  it('is checked like the other durations, and a misspelt key is refused', () => {
    expect(() => createWorker({ pool: t.pool, tasks: [noop], startTimeout: '-1s' })).toThrow(ConfigError);
    expect(() => createWorker({ pool: t.pool, tasks: [noop], startTimeout: 0 })).toThrow(/startTimeout/);
    expect(() => createWorker({ pool: t.pool, tasks: [noop], startTimout: '1s' } as never)).toThrow(/startTimeout/);
    expect(() => createDispatcher({ pool: t.pool, publisher, startTimeout: 'soon' })).toThrow(/startTimeout/);
  });
});
