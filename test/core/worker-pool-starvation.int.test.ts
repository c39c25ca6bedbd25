// Nothing hangs silently (docs/design.md §9, invariant 12): when handlers hold every connection of the pool,
// the worker's own statements (heartbeat, claim, fenced writes) wait for one. The worker reports
// such a wait once it outlasts the heartbeat interval: a `pool:waiting` event with the pool's
// counts, one warn record per episode, and one record when connections reach it again.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueueMany, type WorkerLogger } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

interface LogRecord {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function memoryLogger(): { logger: WorkerLogger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at = (level: string) => (message: string, fields: object = {}) => void records.push({ level, message, fields: fields as Record<string, unknown> });
  return { logger: { error: at('error'), warn: at('warn'), info: at('info') }, records };
}

describe('a pool held by handlers', () => {
  it('is reported: pool:waiting once the wait outlasts the heartbeat interval, one warn line, one line when it ends', async () => {
    // two connections, both taken by the two handlers: heartbeats and claims must wait
    const pool = new pg.Pool({ connectionString: t.url, max: 2 });
    pool.on('error', () => undefined);
    const release = gate();
    const { logger, records } = memoryLogger();
    let holding = 0;
    const bothHeld = gate();
    const hog = defineTask<object>('pool-hog', {
      lease: '3s',
      handler: async () => {
        const client = await pool.connect();
        if (++holding === 2) bothHeld.open();
        try {
          await release.wait;
        } finally {
          client.release();
        }
      },
    });
    await enqueueMany(t.pool, hog, [{ payload: {} }, { payload: {} }]);
    const worker = track(createWorker({ pool, tasks: [hog], concurrency: 2, heartbeatInterval: '200ms', pollInterval: '50ms', logger }));
    const waiting = nextEvent(worker, 'pool:waiting');
    await worker.start();
    await bothHeld.wait;
    const event = await waiting;
    expect(event.waitedMs).toBeGreaterThanOrEqual(200);
    expect(event.waiting).toBeGreaterThanOrEqual(1);
    expect(event.pool).toMatchObject({ max: 2, total: 2, idle: 0 });
    const warned = records.filter((r) => r.level === 'warn' && r.message.includes('for a connection from the pool'));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.fields).toMatchObject({ owner: worker.owner, pool: { max: 2 } });

    const finished = nextEvent(worker, 'worker:idle');
    release.open();
    await finished;
    await expect.poll(() => records.filter((r) => r.level === 'info' && r.message.includes('pool connections reach the worker again')), {
      timeout: 10_000,
    }).toHaveLength(1);
    await worker.stop();
    await pool.end();
    // one episode: one warn line, however many statements waited in it
    expect(records.filter((r) => r.level === 'warn')).toHaveLength(1);
    expect(records.filter((r) => r.level === 'error')).toEqual([]);
  });
});
