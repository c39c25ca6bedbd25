// Limits are fair under mixed load (issue 32 item 3): tasks under a limit are claimed by priority
// and age beside unlimited ones, whatever the worker's buffer holds, and start ahead of it, while
// the limit's bounds hold. Before, they were offered only for slots free of the buffer, so steady
// unlimited work (which keeps the buffer full) left them waiting until it was gone.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineLimit, defineTask, enqueueMany } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

describe('limits under mixed load', () => {
  it('limited tasks start at their rate while unlimited work keeps the buffer full, within their bounds', async () => {
    const api = defineLimit('fair.api', { concurrency: 1, rate: { limit: 20, period: '1s' } });
    let limitedRunning = 0;
    let limitedMostAtOnce = 0;
    let bulkLeft = 600;
    let limitedDuringBulk = 0;
    let limitedDone = 0;
    const limited = defineTask<{ n: number }>('fair.limited', {
      limit: api,
      handler: async () => {
        limitedMostAtOnce = Math.max(limitedMostAtOnce, ++limitedRunning);
        if (bulkLeft > 0) limitedDuringBulk++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        limitedRunning--;
        limitedDone++;
      },
    });
    const bulk = defineTask<{ n: number }>('fair.bulk', {
      handler: async () => {
        bulkLeft--;
        await new Promise((resolve) => setTimeout(resolve, 10));
      },
    });
    // the limited tasks are the older ones: by age they come first, by their limit at 20 a second.
    // A fixed buffer of 8 behind 2 slots: 600 × 10 ms of unlimited work keeps it full for 3 s
    await enqueueMany(t.pool, limited, Array.from({ length: 30 }, (_, n) => ({ payload: { n } })));
    await enqueueMany(t.pool, bulk, Array.from({ length: 600 }, (_, n) => ({ payload: { n } })));
    const worker = track(createWorker({ pool: t.pool, tasks: [limited, bulk], concurrency: 2, prefetch: 8 }));
    await worker.start();
    // (not worker:idle: a worker waiting for the rate's window has nothing in flight either)
    const deadline = Date.now() + 60_000;
    while (limitedDone < 30 || bulkLeft > 0) {
      if (Date.now() > deadline) throw new Error(`not all done within 60 s: ${30 - limitedDone} limited, ${bulkLeft} unlimited left`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // the limit's concurrency held; its rate let 20 a second through, so at 3 s of unlimited work
    // (more on a slow machine) at least a third of them started while it ran (before: none)
    expect(limitedMostAtOnce).toBe(1);
    expect(limitedDuringBulk).toBeGreaterThanOrEqual(10);
    // no attempt was spent waiting for the limit
    const attempts = await sql<{ most: number }>`SELECT max(attempts)::int AS most FROM leasehold.task`.execute(t.db);
    expect(attempts.rows[0]!.most).toBe(1);
    await worker.stop();
  });
});
