// Issue 36, poolers: behind PgBouncer in transaction mode, wake-ups come by LISTEN on the direct
// connection given as `listenConnectionString` (a poll interval of an hour proves nothing else
// woke the worker within the test's deadline), and a LISTEN connection that goes through the
// pooler is refused at start. waitForResult: by notification with a direct connection, by
// polling without.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ConfigError, createWorker, defineTask, enqueue, noPreparedStatements, waitForResult } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { databaseOf, usePgBouncer } from './pgbouncer.js';
import { usePools } from './pooled.js';

const t = useTestDatabase();
const bouncer = usePgBouncer();
const openPool = usePools(() => bouncer.url(databaseOf(t.url)));
const track = useWorkers();

describe('LISTEN behind PgBouncer in transaction mode', () => {
  it('with listenConnectionString, an idle worker is woken by the notification of a task enqueued through the pooler', async () => {
    const ran: number[] = [];
    const work = defineTask<{ n: number }>('listen-wake', { handler: ({ n }) => void ran.push(n) });
    const pool = openPool();
    const worker = track(createWorker({ pool, tasks: [work], noPreparedStatements: true, listenConnectionString: t.url, pollInterval: '1h', logger: null }));
    const errors: Error[] = [];
    worker.on('worker:error', ({ error }) => errors.push(error));
    const idle = nextEvent(worker, 'worker:idle');
    await worker.start();
    await idle;
    for (let n = 0; n < 5; n++) {
      const ref = await enqueue(pool, work, { n });
      // a poll would come in an hour: only the notification can wake the worker in time
      await nextEvent(worker, 'task:succeeded', ({ task }) => task.id === ref.id, 15_000);
    }
    await worker.stop({ timeout: '5s' });
    expect(ran).toEqual([0, 1, 2, 3, 4]);
    expect(errors).toEqual([]);
  });

  it('a listenConnectionString that goes through the pooler too is refused at start(), naming the setting', async () => {
    const work = defineTask('listen-refused', { handler: () => {} });
    const pool = openPool({ max: 2 });
    // not tracked: a worker whose start failed never ran, and emits no worker:stopped
    const worker = createWorker({ pool, tasks: [work], noPreparedStatements: true, listenConnectionString: bouncer.url(databaseOf(t.url)), logger: null });
    const failure = await worker.start().then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as ConfigError).option).toBe('listenConnectionString');
    expect((failure as ConfigError).message).toMatch(/did not arrive on it within 3 s.*not through the pooler/);
  });

  it('waitForResult through the pooler: woken by notification with a direct connection, by polling without', async () => {
    const double = defineTask<{ n: number }>('listen-double', { handler: ({ n }) => n * 2 });
    const pool = noPreparedStatements(openPool());
    const worker = track(createWorker({ pool, tasks: [double], noPreparedStatements: true, listenConnectionString: t.url, pollInterval: '1h', logger: null }));
    await worker.start();
    // direct: a poll interval of an hour, so only the task's end notification ends the wait
    const a = await enqueue(pool, double, { n: 21 });
    expect(await waitForResult(pool, a, { listenConnectionString: t.url, pollInterval: '1h', timeout: '15s' })).toBe(42);
    // no direct connection: nothing listens, the wait reads the task every 100 ms
    const b = await enqueue(pool, double, { n: 5 });
    expect(await waitForResult(pool, b, { pollInterval: '100ms', timeout: '15s' })).toBe(10);
    await worker.stop({ timeout: '5s' });
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE name = 'listen-double' AND status = 'done'`.execute(t.db);
    expect(rows[0]!.n).toBe(2);
  });
});
