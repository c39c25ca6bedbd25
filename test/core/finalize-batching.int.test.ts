// The finalizer batches completions while a write is in flight. Completions that a write's own
// commit brings about (an ordered group's next head, handed to the worker by that write, runs and
// completes at once) must join what queued meanwhile, or the two sets take turns on the round
// trip for as long as the drain runs: twice the writes, each half the size.
import { describe, expect, it } from 'vitest';
import { defineTask, enqueueMany, taskTable } from '@leasehold/core';
import { leaseClaim, toDone, type FinalizeResult } from '@leasehold/core/internal';
import { Finalizer, type QueuedWrite } from '../../packages/core/src/worker/finalizer.js';
import { countingPool } from '../counting-pool.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const job = defineTask<{ n: number }>('finalize-batching', { handler: () => {} });

/**
 * Runs `then` a few promise turns later, within the same tick: the way a handed head's handler
 * starts, runs and completes (the runner's accept, start and end are promise continuations).
 */
async function settleThen(then: () => void): Promise<void> {
  for (let k = 0; k < 10; k++) await Promise.resolve();
  then();
}

describe('the finalizer', () => {
  it('writes the completions a write brought about together with those that queued during it', async () => {
    await enqueueMany(t.pool, job, Array.from({ length: 30 }, (_, n) => ({ payload: { n } })));
    const { claimed } = await leaseClaim(t.pool, table, { owner: 'batching', batch: 30, leaseMs: 3_600_000 });
    expect(claimed).toHaveLength(30);
    const [first, queued, broughtAbout] = [claimed.slice(0, 10), claimed.slice(10, 20), claimed.slice(20)];

    const { pool, sent } = countingPool(t.url);
    try {
      const results = new Map<string, FinalizeResult | undefined>();
      const errors: Error[] = [];
      const finalizer = new Finalizer(pool, table, (error) => errors.push(error));
      const write = (c: (typeof claimed)[number], then?: () => void): QueuedWrite => ({
        id: c.id,
        leaseVersion: c.leaseVersion,
        groupKey: null,
        parentId: null,
        transition: toDone(),
        finalized: (result, error) => {
          if (error !== undefined) errors.push(error);
          results.set(c.id, result);
          if (then !== undefined) void settleThen(then);
        },
      });
      // each of the first ten, once written, brings one more completion about (as a handed head would)
      first.forEach((c, i) => finalizer.enqueue(write(c, () => finalizer.enqueue(write(broughtAbout[i]!)))));
      // the first batch is taken after this turn of the event loop; these queue behind it
      await new Promise((r) => setImmediate(r));
      for (const c of queued) finalizer.enqueue(write(c));
      await finalizer.idle();

      expect(errors).toEqual([]);
      expect([...results.values()].every((r) => r?.won === true && r.status === 'done')).toBe(true);
      expect(results.size).toBe(30);
      // the first write, then one for the ten that queued and the ten it brought about
      const writes = sent.filter((text) => !/^\s*(BEGIN|COMMIT|ROLLBACK)\b/i.test(text));
      expect(writes).toHaveLength(2);
    } finally {
      await pool.end();
    }
  });
});
