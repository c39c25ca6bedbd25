// Due means started (issue 32), the slot part: a workflow run resumed after a park that waits for
// its step's record (a write of the worker's own, batched) lends its slot to the next task, as a
// parked run holds none, so the runs woken with it are not kept in the buffer for a database
// round trip; and it takes a slot back before its code goes on, so no more than `concurrency`
// runs ever run their code at once. Nothing here is timed: a row lock holds one run's record for
// as long as the test needs. (Each run sleeps first: a run on its first pass keeps its slot.)
import { createWorker, defineTask, enqueue, waitForResult, type TaskContext } from '@leasehold/core';
import pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { waitUntil } from '../wake-state.js';

const t = useTestDatabase();
const track = useWorkers();

const DEADLINE_MS = 20_000;
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('a resumed run waiting for its step record lends its slot', () => {
  it('the next run starts while the first one\'s record is held up, and their code never runs two at once on one slot', async () => {
    const seen: string[] = [];
    let running = 0;
    let most = 0;
    /** What runs the code of a run outside leasehold's writes: counted, for the bound. */
    const code = async (what: string) => {
      running++;
      most = Math.max(most, running);
      seen.push(what);
      await tick();
      running--;
    };
    // the first run's step locks its own row: its record (fenced, by that row) waits for the lock
    const locker = new pg.Client({ connectionString: t.url });
    await locker.connect();
    let firstId = '';
    let secondId = '';
    const stepRecorded = async (id: string) =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_step WHERE task_id = ${id}::bigint AND name = 'first'`.execute(t.db)).rows[0]!.n === 1;
    try {
      const lender = defineTask('on-time-slots.lender', {
        handler: async (p: { k: string }, ctx: TaskContext) => {
          await ctx.sleep('nap', '50ms');
          await code(`start ${p.k}`);
          await ctx.step('first', async () => {
            await code(`fn ${p.k}`);
            if (p.k === 'A') {
              await locker.query('BEGIN');
              await locker.query('SELECT id FROM leasehold.task WHERE id = $1::bigint FOR UPDATE', [ctx.task.id]);
            }
            return p.k;
          });
          running++;
          most = Math.max(most, running);
          seen.push(`after ${p.k}`);
          // the first run goes on only once the second's record is written: both want a slot then
          if (p.k === 'A') await waitUntil("the second run's record", () => stepRecorded(secondId), DEADLINE_MS);
          await tick();
          running--;
          return p.k;
        },
      });
      const worker = track(createWorker({ pool: t.pool, tasks: [lender], concurrency: 1 }));
      const a = await enqueue(t.pool, lender, { k: 'A' });
      firstId = a.id;
      await worker.start();
      // A's record waits for the lock; its slot runs B meanwhile, up to B's own record
      await waitUntil('the first run locked its row', async () => seen.includes('fn A'), DEADLINE_MS);
      const b = await enqueue(t.pool, lender, { k: 'B' });
      secondId = b.id;
      await waitUntil('the second run ran its step while the first waited for its record', async () => seen.includes('fn B'), DEADLINE_MS);
      expect(await stepRecorded(firstId)).toBe(false);
      expect(seen).not.toContain('after A');
      await locker.query('COMMIT');
      expect(await waitForResult(t.pool, a, { timeout: DEADLINE_MS })).toBe('A');
      expect(await waitForResult(t.pool, b, { timeout: DEADLINE_MS })).toBe('B');
      // B's record came back while A ran its code: B waited for the slot A took back
      expect(seen.indexOf('after B')).toBeGreaterThan(seen.indexOf('after A'));
      expect(most).toBe(1);
      await worker.stop();
    } finally {
      await locker.end();
    }
  });

  it('a run stopped while its slot is lent ends there: the stop returns by its deadline', async () => {
    const locker = new pg.Client({ connectionString: t.url });
    await locker.connect();
    let stepped = 0;
    try {
      const held = defineTask('on-time-slots.held', {
        handler: async (_p: object, ctx: TaskContext) => {
          await ctx.sleep('nap', '50ms');
          await ctx.step('first', async () => {
            stepped++;
            await locker.query('BEGIN');
            await locker.query('SELECT id FROM leasehold.task WHERE id = $1::bigint FOR UPDATE', [ctx.task.id]);
          });
        },
      });
      const worker = track(createWorker({ pool: t.pool, tasks: [held], concurrency: 1, logger: null }));
      worker.on('worker:error', () => undefined);
      await enqueue(t.pool, held, {});
      await worker.start();
      await waitUntil('the run locked its row', async () => stepped === 1, DEADLINE_MS);
      // its record waits for the lock, its slot lent; the stop aborts it and cuts the write
      const stopped = nextEvent(worker, 'worker:stopped', () => true, DEADLINE_MS);
      const abandoned = nextEvent(worker, 'worker:abandoned', () => true, DEADLINE_MS);
      await worker.stop({ timeout: '100ms' });
      await stopped;
      expect((await abandoned).tasks).toHaveLength(1);
      expect(stepped).toBe(1);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });
});
