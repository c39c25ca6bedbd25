import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

/** A batcher whose round trip takes `ms` and answers each request with itself; `batches` records what each sent. */
function timedBatcher(ms: number, take?: (queue: readonly number[]) => number[]) {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>(async (batch) => {
    batches.push([...batch]);
    await new Promise((r) => setTimeout(r, ms));
    return batch;
  }, take);
  return { batcher, batches, sizes: () => batches.map((b) => b.length) };
}

/** A workflow run of `steps` steps: each waits for its record before the next, as `ctx.step` does. */
async function run(batcher: Batcher<number, number>, id: number, steps: number): Promise<void> {
  for (let k = 0; k < steps; k++) expect(await batcher.submit(id)).toBe(id);
}

describe('Batcher', () => {
  it('sends the requests of one tick together', async () => {
    const { batcher, sizes } = timedBatcher(1);
    await Promise.all([1, 2, 3].map((i) => batcher.submit(i)));
    expect(sizes()).toEqual([3]);
  });

  it('merges runs that started apart into one batch instead of letting them take turns', async () => {
    const { batcher, sizes } = timedBatcher(2);
    const early = [0, 1, 2].map((i) => run(batcher, i, 20));
    // the first batch (three runs) is in flight before the other five ask
    await new Promise((r) => setImmediate(r));
    expect(sizes()).toEqual([3]);
    const late = [3, 4, 5, 6, 7].map((i) => run(batcher, i, 20));
    await Promise.all([...early, ...late]);
    // the five queued meanwhile go with the three the first batch resumed: from then on one batch
    // of all eight per round trip, until the early three are done a step ahead
    expect(sizes()).toEqual([3, ...Array<number>(19).fill(8), 5]);
  });

  it('keeps what `take` leaves for a batch after the one it picked', async () => {
    // one request per id in a batch: a second one waits for the first's answer
    const { batcher, batches } = timedBatcher(1, (queue) => {
      const seen = new Set<number>();
      return queue.flatMap((id, i) => (seen.has(id) ? [] : (seen.add(id), [i])));
    });
    await Promise.all([batcher.submit(1), batcher.submit(1), batcher.submit(2)]);
    expect(batches).toEqual([[1, 2], [1]]);
  });

  it('rejects every request of a batch whose round trip failed, and goes on with the next', async () => {
    let calls = 0;
    const batcher = new Batcher<number, number>(async (batch) => {
      calls++;
      if (calls === 1) throw new Error('connection lost');
      return batch;
    });
    const failed = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await batcher.submit(3)).toBe(3);
  });
});
