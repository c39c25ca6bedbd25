// A starting worker opens the pool connections its first tasks' writes will use (and reads its
// table on each) beside its first claims, so that those tasks do not wait for a connection's start and its backend's first
// look at the catalog. It must never take all of a pool's connections: the pool may be the
// application's, and a pool of one connection must still run a worker.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, waitForResult } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const job = defineTask('pool-warmup', { handler: (p: { n: number }) => p.n * 2 });

/** The backends open on the test database for `pool`, by its application name. */
async function backends(name: string): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [name]);
  return rows[0]!.n;
}

async function startOn(max: number, name: string) {
  const pool = new pg.Pool({ connectionString: t.url, max, application_name: name });
  const worker = track(createWorker({ pool, tasks: [job], pollInterval: 50, listen: false }));
  await worker.start();
  return { pool, worker };
}

describe('a starting worker opens its pool connections', () => {
  it('several of them, as it starts, not as tasks come', async () => {
    const { pool, worker } = await startOn(10, 'warmup-ten');
    try {
      // four opened as it starts (the check's among them, or beside them), not as tasks come
      expect(pool.totalCount).toBeGreaterThanOrEqual(4);
      const until = Date.now() + 10_000;
      while ((await backends('warmup-ten')) < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(await backends('warmup-ten')).toBeGreaterThanOrEqual(4);
      const handle = await enqueue(t.pool, job, { n: 21 });
      expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toBe(42);
    } finally {
      await worker.stop();
      await pool.end();
    }
  });

  it('a small pool, of two connections or of one, still starts it and runs tasks, and answers its owner', async () => {
    for (const max of [2, 1]) {
      const name = `warmup-${max}`;
      const { pool, worker } = await startOn(max, name);
      try {
        expect(pool.totalCount).toBeLessThanOrEqual(max);
        expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
        const handle = await enqueue(t.pool, job, { n: max });
        expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toBe(max * 2);
      } finally {
        await worker.stop();
        await pool.end();
      }
    }
  });
});
