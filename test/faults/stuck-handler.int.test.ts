// A stuck handler that ignores its AbortSignal, step by step in one process: its lease runs out
// (time moved in the database, no sleeping), another worker takes the task over and finishes it,
// and then the stuck handler returns. The fence must refuse its late result.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createLeaseWorker, taskTable, type LeaseWorkerOptions, type TaskRow } from '@leasehold/core';
import { insertTasks, readTask, useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { summary } from './summary.js';

const t = useTestDatabase();
const track = useWorkers();

function worker(owner: string, options: Partial<LeaseWorkerOptions<TaskRow>>) {
  return track(
    createLeaseWorker<TaskRow>({
      pool: t.pool,
      table: taskTable(),
      names: ['stuck'],
      owner,
      pollInterval: '100ms',
      handle: async () => {},
      ...options,
    }),
  );
}

async function expireLeases(): Promise<void> {
  await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 ms' WHERE status = 'processing'`.execute(t.db);
}

describe('a stuck handler deaf to its AbortSignal', () => {
  it('finishes after its lease was taken over: its finalize is refused and the task is done once, by the new owner', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const [id] = await insertTasks(t.db, 1, { name: 'stuck' });
    const entered = gate();
    const release = gate();
    const effects: string[] = [];
    // a heartbeat too rare to notice in time: as if the process had been paused
    const a = worker('A', {
      concurrency: 1,
      lease: '60s',
      heartbeatInterval: '50s',
      handle: async (task) => {
        entered.open();
        await release.wait; // never looks at ctx.signal
        effects.push(`A@${task.leaseVersion}`);
      },
    });
    await a.start();
    await entered.wait;
    await expireLeases();

    const b = worker('B', { handle: async (task) => void effects.push(`B@${task.leaseVersion}`) });
    const bDone = nextEvent(b, 'task:succeeded');
    await b.start();
    expect((await bDone).task.leaseVersion).toBe(2);
    await b.stop();

    const refused = nextEvent(a, 'task:lease-lost');
    release.open();
    const { error } = await refused;
    expect(error.message).toContain('finalize refused');
    expect(error.leaseVersion).toBe(1);
    await a.stop();

    expect(effects).toEqual(['B@2', 'A@1']); // the late effect happened: fencing guards the database, not the world
    expect(await readTask(t.db, id!)).toMatchObject({ status: 'done', leaseVersion: 2, attempts: 2, leaseOwner: null });
    summary('stuck-handler', { tasks: 1, kills: 0, duplicates: 1, 'stale-refused': 1, lost: 0 });
  });

  it('is abandoned when its heartbeat finds the lease moved on: nothing is written for it', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const [id] = await insertTasks(t.db, 1, { name: 'stuck' });
    const entered = gate();
    const release = gate();
    const a = worker('A', {
      concurrency: 1,
      lease: '2s',
      handle: async () => {
        entered.open();
        await release.wait;
      },
    });
    await a.start();
    await entered.wait;
    await expireLeases();
    const b = worker('B', {});
    const bDone = nextEvent(b, 'task:succeeded');
    await b.start();
    await bDone;
    await b.stop();
    // A's next heartbeat finds the token moved on and aborts the handler's signal
    const { error } = await nextEvent(a, 'task:lease-lost');
    expect(error.message).not.toContain('finalize refused');
    const doneAt = (await readTask(t.db, id!)).doneAt;
    release.open();
    await a.stop();
    expect(await readTask(t.db, id!)).toMatchObject({ status: 'done', leaseVersion: 2, doneAt });
  });
});

describe('a worker that re-claims its own stuck task', () => {
  it('keeps tracking the new claim when the old handler returns', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    await insertTasks(t.db, 1, { name: 'stuck' });
    const first = gate();
    const second = gate();
    const entered = [gate(), gate()];
    const a = worker('A', {
      concurrency: 2,
      lease: '60s',
      heartbeatInterval: '50s',
      handle: async (task) => {
        entered[task.leaseVersion - 1]!.open();
        await (task.leaseVersion === 1 ? first.wait : second.wait);
      },
    });
    await a.start();
    await entered[0]!.wait;
    await expireLeases();
    await entered[1]!.wait; // A itself took its expired task over (lease_version 2)
    const refused = nextEvent(a, 'task:lease-lost');
    first.open();
    await refused;
    await new Promise((r) => setImmediate(r)); // let the old run's cleanup finish
    try {
      // in-flight work is keyed by id and token: the old run's cleanup must not drop the new
      // claim (else the heartbeat stops extending it and a busy slot is counted as free)
      expect(a.inFlightCount).toBe(1);
    } finally {
      second.open();
      await a.stop();
    }
  });
});
