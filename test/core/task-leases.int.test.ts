// Each task type's `lease` applies to its own rows when one worker runs several: the claim sets
// each row's lease_until by its name where the leases differ, and one lease for all otherwise.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

/** Seconds from now to each processing row's lease_until, by task name, once `n` are processing. */
async function leaseSeconds(n: number): Promise<Record<string, number>> {
  let rows: { name: string; s: number }[] = [];
  await expect
    .poll(async () => {
      ({ rows } = await sql<{ name: string; s: number }>`
        SELECT name, extract(epoch FROM lease_until - now())::float8 AS s FROM leasehold.task WHERE status = 'processing'`.execute(t.db));
      return rows.length;
    }, { timeout: 15_000 })
    .toBe(n);
  return Object.fromEntries(rows.map((r) => [r.name, r.s]));
}

describe('task leases in one worker', () => {
  it('each task type\'s rows get its own lease', async () => {
    const running = gate();
    const short = defineTask<{ n: number }>('short-lease', { lease: '5s', handler: () => running.wait });
    const long = defineTask<{ n: number }>('long-lease', { lease: '10m', handler: () => running.wait });
    await enqueue(t.pool, short, { n: 1 });
    await enqueue(t.pool, long, { n: 2 });
    const worker = track(createWorker({ pool: t.pool, tasks: [short, long], logger: null }));
    await worker.start();
    const s = await leaseSeconds(2);
    expect(s['short-lease']).toBeLessThan(60);
    expect(s['long-lease']).toBeGreaterThan(300);
    running.open();
    await worker.stop();
  });

  it('tasks that share a lease get it', async () => {
    const running = gate();
    const a = defineTask<{ n: number }>('same-a', { lease: '10m', handler: () => running.wait });
    const b = defineTask<{ n: number }>('same-b', { lease: '10m', handler: () => running.wait });
    await enqueue(t.pool, a, { n: 1 });
    await enqueue(t.pool, b, { n: 2 });
    const worker = track(createWorker({ pool: t.pool, tasks: [a, b], logger: null }));
    await worker.start();
    const s = await leaseSeconds(2);
    expect(s['same-a']).toBeGreaterThan(300);
    expect(s['same-b']).toBeGreaterThan(300);
    running.open();
    await worker.stop();
  });
});
