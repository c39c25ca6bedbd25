// A worker with nothing left to run sends its last completions beside the fenced write in
// flight instead of behind it: the end of a drain (and an ordered group's next head) then waits
// for one statement, not two. Here the first task's write is held before it reaches the
// database; the second task, finishing while it is held with nothing else to run, is written all
// the same, and the first once it is let through.
import pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

const statusOf = async (n: number) =>
  (await sql<{ status: string }>`SELECT status FROM leasehold.task WHERE (payload->>'n')::int = ${n}`.execute(t.db)).rows[0]?.status;

describe('the fenced writes of a worker with nothing left to run', () => {
  it('go out beside the write in flight, not behind it', async () => {
    const second = gate();
    const task = defineTask<{ n: number }>('beside', { handler: async ({ n }) => (n === 2 ? second.wait : undefined) });
    await enqueue(t.pool, task, { n: 1 });
    await enqueue(t.pool, task, { n: 2 });

    // holds the first fenced write on its way to the database until released
    const held = gate();
    let holding = false;
    const pool = new pg.Pool({ connectionString: t.url, max: 10 });
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const first = args[0];
        const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
        if (!holding && /SET status = 'done'/.test(text)) {
          holding = true;
          const sent = held.wait.then(() => query(...args));
          return typeof args.at(-1) === 'function' ? undefined : sent;
        }
        return query(...args);
      };
    });
    try {
      const worker = track(createWorker({ pool, tasks: [task], concurrency: 2, logger: null }));
      const firstEnded = nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === 1);
      await worker.start();
      await expect.poll(() => holding, { timeout: 15_000 }).toBe(true);
      second.open();
      await expect.poll(() => statusOf(2), { timeout: 15_000 }).toBe('done');
      expect(await statusOf(1)).toBe('processing');
      held.open();
      await firstEnded;
      expect(await statusOf(1)).toBe('done');
      await worker.stop();
    } finally {
      held.open();
      await pool.end();
    }
  });
});
