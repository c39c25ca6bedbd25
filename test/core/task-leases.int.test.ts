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

/**
 * One worker runs one task of each `[name, lease]` and holds them running; returns the seconds
 * each row's lease_until is ahead of now, by name.
 */
async function leasesOfOneWorker(leases: readonly (readonly [string, string])[]): Promise<Record<string, number>> {
  const running = gate();
  const tasks = leases.map(([name, lease]) => defineTask<{ n: number }>(name, { lease, handler: () => running.wait }));
  for (const [n, task] of tasks.entries()) await enqueue(t.pool, task, { n });
  const worker = track(createWorker({ pool: t.pool, tasks, logger: null }));
  await worker.start();
  try {
    return await leaseSeconds(tasks.length);
  } finally {
    running.open();
    await worker.stop();
  }
}

describe('task leases in one worker', () => {
  it('each task type\'s rows get its own lease', async () => {
    const s = await leasesOfOneWorker([['short-lease', '5s'], ['long-lease', '10m']]);
    expect(s['short-lease']).toBeLessThan(60);
    expect(s['long-lease']).toBeGreaterThan(300);
  });

  it('tasks that share a lease get it', async () => {
    const s = await leasesOfOneWorker([['same-a', '10m'], ['same-b', '10m']]);
    expect(s['same-a']).toBeGreaterThan(300);
    expect(s['same-b']).toBeGreaterThan(300);
  });
});
