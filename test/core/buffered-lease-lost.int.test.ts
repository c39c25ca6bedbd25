// A buffered task (claimed, waiting for a slot) whose lease is lost before its turn: when a slot
// frees it returns at once, and must hand the slot on to the tasks buffered behind it.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueueMany, waitForResult } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

describe('a buffered task that lost its lease', () => {
  it('passes its slot on: the tasks buffered behind it still run', async () => {
    const first = gate();
    const task = defineTask('buffered', {
      lease: '30s',
      handler: async (p: { n: number }) => {
        if (p.n === 0) await first.wait;
        return p.n;
      },
    });
    const handles = await enqueueMany(t.pool, task, [0, 1, 2, 3].map((n) => ({ payload: { n } })));
    const worker = track(createWorker({ pool: t.pool, tasks: [task], concurrency: 1, prefetch: 3, pollInterval: 20, heartbeatInterval: '100ms' }));
    const claimedAll = Promise.all(handles.map((h) => nextEvent(worker, 'task:claimed', ({ task: c }) => c.id === h.id)));
    await worker.start();
    await claimedAll; // task 0 runs; 1, 2 and 3 wait in the buffer
    // another claim takes task 1 over while it is buffered: the heartbeat reports its lease lost
    const lost = nextEvent(worker, 'task:lease-lost', ({ task: c }) => c.id === handles[1]!.id);
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${handles[1]!.id}`.execute(t.db);
    await lost;
    first.open();
    expect(await Promise.all([0, 2, 3].map((i) => waitForResult(t.pool, handles[i]!, { timeout: '20s' })))).toEqual([0, 2, 3]);
    await worker.stop();
  });
});
