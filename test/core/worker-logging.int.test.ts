// What a worker logs (issue #12 item 5): pino (fields first) and console-like loggers (message
// first) both get their records with the task's fields and the error with its stack; a dead task
// and a lost lease are one record each; retries go to debug; a database outage is one record
// when it starts and one when it ends, not one per poll.
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, PermanentError } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { startFreezableProxy } from './freezable-proxy.js';

const t = useTestDatabase();
const track = useWorkers();

interface PinoRecord {
  level: number;
  msg: string;
  owner: string;
  id?: string;
  taskName?: string;
  attempt?: number;
  err?: { type: string; message: string; stack: string };
}

/** A pino logger at debug level whose JSON records are collected in memory. */
function pinoRecords(): { logger: pino.Logger; records: PinoRecord[] } {
  const records: PinoRecord[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void records.push(JSON.parse(line) as PinoRecord) });
  return { logger, records };
}

describe('logging through pino, as it is', () => {
  it('a dead task: exactly one error record with the task id, name, attempt and the error with its stack', async () => {
    const { logger, records } = pinoRecords();
    const doomed = defineTask<object>('doomed', {
      handler: async () => {
        throw new PermanentError('no such account');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [doomed], pollInterval: 50, logger }));
    const dead = nextEvent(worker, 'task:dead');
    const { id } = await enqueue(t.pool, doomed, {});
    await worker.start();
    const event = await dead;
    await worker.stop();
    expect(event.error).toBeInstanceOf(PermanentError); // an Error, like every error field
    const about = records.filter((r) => r.id === id);
    expect(about).toHaveLength(1);
    expect(about[0]).toMatchObject({ level: 50, id, taskName: 'doomed', attempt: 1, owner: worker.owner });
    expect(about[0]!.msg).toContain(`task ${id} is dead`);
    expect(about[0]!.err).toMatchObject({ type: 'PermanentError', message: 'no such account' });
    expect(about[0]!.err!.stack).toContain('PermanentError: no such account\n    at ');
  });

  it('a lost lease: exactly one warn record with the task id and the LeaseLostError', async () => {
    const { logger, records } = pinoRecords();
    const started = gate();
    const held = defineTask<object>('held-for-loss', {
      lease: '30s',
      handler: (_payload, ctx) =>
        new Promise((_resolve, reject) => {
          started.open();
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
        }),
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [held], pollInterval: 50, heartbeatInterval: 50, logger }));
    const { id } = await enqueue(t.pool, held, {});
    const lost = nextEvent(worker, 'task:lease-lost');
    await worker.start();
    await started.wait;
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${id}`.execute(t.db);
    await lost;
    await worker.stop();
    const about = records.filter((r) => r.id === id);
    expect(about).toHaveLength(1);
    expect(about[0]).toMatchObject({ level: 40, id, taskName: 'held-for-loss', attempt: 1 });
    expect(about[0]!.err).toMatchObject({ type: 'LeaseLostError', message: `lease lost on task ${id}` });
  });

  it('a retry is one debug record, with the error', async () => {
    const { logger, records } = pinoRecords();
    let calls = 0;
    const flaky = defineTask<object>('flaky-once', {
      backoff: { base: 1, cap: 1 },
      handler: async () => {
        if (++calls === 1) throw new Error('flaky');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flaky], pollInterval: 50, logger }));
    const { id } = await enqueue(t.pool, flaky, {});
    const succeeded = nextEvent(worker, 'task:succeeded', ({ task }) => task.id === id);
    await worker.start();
    await succeeded;
    await worker.stop();
    const about = records.filter((r) => r.id === id);
    expect(about).toEqual([expect.objectContaining({ level: 20, attempt: 1, err: expect.objectContaining({ message: 'flaky' }) })]);
  });
});

describe('logging through a console-like logger', () => {
  it('gets the message first and the fields second, the error as an Error', async () => {
    const calls: { level: string; args: unknown[] }[] = [];
    const logger = {
      error: (...args: unknown[]) => void calls.push({ level: 'error', args }),
      warn: (...args: unknown[]) => void calls.push({ level: 'warn', args }),
    };
    const doomed = defineTask<object>('doomed-console', {
      handler: async () => {
        throw new PermanentError('gone');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [doomed], pollInterval: 50, logger }));
    const dead = nextEvent(worker, 'task:dead');
    const { id } = await enqueue(t.pool, doomed, {});
    await worker.start();
    await dead;
    await worker.stop();
    const about = calls.filter((c) => (c.args[1] as { id?: string } | undefined)?.id === id);
    expect(about).toHaveLength(1);
    expect(about[0]!.level).toBe('error');
    expect(about[0]!.args[0]).toEqual(expect.stringContaining(`[leasehold] task ${id} is dead`));
    expect((about[0]!.args[1] as { err: unknown }).err).toBeInstanceOf(PermanentError);
  });
});

describe('a database outage', () => {
  it('a refused connection for 10 s is logged once when it starts and once when it ends', async () => {
    const link = await startFreezableProxy(t.url);
    const pool = new pg.Pool({ connectionString: link.url, max: 2 });
    pool.on('error', () => undefined);
    const { logger, records } = pinoRecords();
    const noop = defineTask<object>('outage-noop', { handler: async () => {} });
    const worker = track(createWorker({ pool, tasks: [noop], pollInterval: 200, logger }));
    let errors = 0;
    worker.on('worker:error', () => void errors++);
    await worker.start();
    await nextEvent(worker, 'worker:idle');
    const port = link.port;
    await link.close(); // every connection cut, and new ones refused
    // the outage itself: it has to last, so this waits on the clock (nothing to synchronise with)
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    expect(errors).toBeGreaterThan(10); // the events still report every failed poll
    expect(records.length).toBeLessThanOrEqual(3);
    expect(records.filter((r) => r.msg.includes('database unavailable'))).toHaveLength(1);
    expect(records.find((r) => r.msg.includes('database unavailable'))!.msg).toMatch(/retry with backoff/);

    const back = await startFreezableProxy(t.url, port);
    try {
      await expect.poll(() => records.filter((r) => r.msg.includes('database available again')).length, { timeout: 5_000 }).toBe(1);
      await worker.stop();
      expect(records.length).toBeLessThanOrEqual(3);
    } finally {
      await pool.end();
      await back.close();
    }
  });
});
