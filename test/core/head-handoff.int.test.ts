// A worker whose fenced write finishes the head of an ordering group takes the group's next head
// itself, in the same transaction, when its own claim could take it: the row goes from blocked
// straight to processing under the worker's lease, with no unblocked ("pending") version and no
// claim in between. Rows it could not claim (another worker's task, not due yet, under a limit)
// are unblocked for any worker, as before. A trigger records every status change of the rows.
import { sql } from 'kysely';
import pg from 'pg';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createWorker, defineLimit, defineTask, enqueueMany, type LeaseWorker } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

interface Change {
  id: string;
  name: string;
  from_status: string;
  from_blocked: boolean;
  to_status: string;
  to_blocked: boolean;
  owner: string | null;
}

beforeAll(recordChanges);
beforeEach(async () => {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, public.task_change`.execute(t.db);
});

async function recordChanges(): Promise<void> {
  await sql`CREATE TABLE public.task_change (seq bigserial, id bigint, name text, from_status text, from_blocked boolean,
                                             to_status text, to_blocked boolean, owner text)`.execute(t.db);
  await sql`CREATE FUNCTION public.record_task_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO public.task_change (id, name, from_status, from_blocked, to_status, to_blocked, owner)
      VALUES (NEW.id, NEW.name, OLD.status, OLD.blocked, NEW.status, NEW.blocked, NEW.lease_owner);
      RETURN NEW;
    END $$`.execute(t.db);
  await sql`CREATE TRIGGER record_task_change AFTER UPDATE OF status, blocked ON leasehold.task
            FOR EACH ROW EXECUTE FUNCTION public.record_task_change()`.execute(t.db);
}

async function changesOf(ids: readonly string[]): Promise<Change[]> {
  const { rows } = await sql<Change>`SELECT id::text, name, from_status, from_blocked, to_status, to_blocked, owner
                                     FROM public.task_change WHERE id = ANY(${ids}::bigint[]) ORDER BY seq`.execute(t.db);
  return rows;
}

async function drain<Row>(worker: LeaseWorker<Row>): Promise<void> {
  const idle = nextEvent(worker, 'worker:idle', () => true, 60_000);
  await worker.start();
  await idle;
}

describe('the next head of an ordering group', () => {
  it("is taken by the worker that finished the head, in the same write: blocked straight to processing, run in order", async () => {
    const ran: number[] = [];
    const step = defineTask<{ n: number }>('handoff-step', { handler: ({ n }) => void ran.push(n) });
    const ids = (await enqueueMany(t.pool, step, Array.from({ length: 6 }, (_, n) => ({ payload: { n }, groupKey: 'order-1' })))).map((r) => r.id);
    const worker = track(createWorker({ pool: t.pool, tasks: [step], concurrency: 1, owner: 'w-1' }));
    await drain(worker);
    await worker.stop();
    expect(ran).toEqual([0, 1, 2, 3, 4, 5]);
    const changes = await changesOf(ids.slice(1));
    // each later row: one change out of blocked, to processing for this worker; then done
    for (const id of ids.slice(1)) {
      const own = changes.filter((c) => c.id === id);
      expect(own[0], `row ${id}`).toMatchObject({ from_status: 'pending', from_blocked: true, to_status: 'processing', to_blocked: false, owner: 'w-1' });
      expect(own.map((c) => c.to_status), `row ${id}`).toEqual(['processing', 'done']);
    }
  });

  it("is left to any worker when the finisher does not run its task: the other worker claims it, the group stays in order", async () => {
    const ran: string[] = [];
    const a = defineTask<{ n: number }>('handoff-a', { handler: ({ n }) => void ran.push(`a${n}`) });
    const b = defineTask<{ n: number }>('handoff-b', { handler: ({ n }) => void ran.push(`b${n}`) });
    // a0, b0, a1 in one group, enqueued in that order (one transaction each: id order = group order)
    await enqueueMany(t.pool, a, [{ payload: { n: 0 }, groupKey: 'mixed' }]);
    const b0 = (await enqueueMany(t.pool, b, [{ payload: { n: 0 }, groupKey: 'mixed' }]))[0]!.id;
    const a1 = (await enqueueMany(t.pool, a, [{ payload: { n: 1 }, groupKey: 'mixed' }]))[0]!.id;
    const wa = track(createWorker({ pool: t.pool, tasks: [a], concurrency: 1, owner: 'w-a' }));
    const wb = track(createWorker({ pool: t.pool, tasks: [b], concurrency: 1, owner: 'w-b' }));
    await wb.start();
    const done = new Promise<void>((resolve) => {
      const check = () => ran.length === 3 && resolve();
      wa.on('task:succeeded', check);
      wb.on('task:succeeded', check);
    });
    await wa.start();
    await done;
    await Promise.all([wa.stop(), wb.stop()]);
    expect(ran).toEqual(['a0', 'b0', 'a1']);
    const changes = await changesOf([b0, a1]);
    // b0 was unblocked (pending) by w-a's write, then claimed by w-b; a1 likewise the other way
    expect(changes.filter((c) => c.id === b0)[0]).toMatchObject({ from_blocked: true, to_status: 'pending', to_blocked: false });
    expect(changes.filter((c) => c.id === b0).find((c) => c.to_status === 'processing')?.owner).toBe('w-b');
    expect(changes.filter((c) => c.id === a1)[0]).toMatchObject({ from_blocked: true, to_status: 'pending', to_blocked: false });
    expect(changes.filter((c) => c.id === a1).find((c) => c.to_status === 'processing')?.owner).toBe('w-a');
  });

  it('is left blocked-then-due when it was enqueued to start later, and runs once due', async () => {
    const ran: number[] = [];
    const step = defineTask<{ n: number }>('handoff-later', { handler: ({ n }) => void ran.push(n) });
    await enqueueMany(t.pool, step, [{ payload: { n: 0 }, groupKey: 'later' }]);
    const later = (await enqueueMany(t.pool, step, [{ payload: { n: 1 }, groupKey: 'later', runAt: new Date(Date.now() + 1_500) }]))[0]!.id;
    const worker = track(createWorker({ pool: t.pool, tasks: [step], concurrency: 1, owner: 'w-later' }));
    const second = nextEvent(worker, 'task:succeeded', (e) => e.task.id === later, 30_000);
    await worker.start();
    await second;
    await worker.stop();
    expect(ran).toEqual([0, 1]);
    // not taken by the write that finished the head: it was not due; unblocked, then claimed
    const changes = await changesOf([later]);
    expect(changes[0]).toMatchObject({ from_blocked: true, to_status: 'pending', to_blocked: false });
    expect(changes.find((c) => c.to_status === 'processing')?.owner).toBe('w-later');
  });

  it("is left to the limit's claim when it runs under a limit: its slot is counted, the bound holds", async () => {
    let running = 0;
    let most = 0;
    const ran: number[] = [];
    const limit = defineLimit('handoff-limit', { concurrency: 1 });
    const step = defineTask<{ n: number }>('handoff-limited', {
      limit,
      handler: async ({ n }) => {
        running++;
        most = Math.max(most, running);
        ran.push(n);
        await new Promise((r) => setImmediate(r));
        running--;
      },
    });
    const ids = (await enqueueMany(t.pool, step, Array.from({ length: 4 }, (_, n) => ({ payload: { n }, groupKey: 'limited' })))).map((r) => r.id);
    const worker = track(createWorker({ pool: t.pool, tasks: [step], concurrency: 4, owner: 'w-limit' }));
    await drain(worker);
    await worker.stop();
    expect(ran).toEqual([0, 1, 2, 3]);
    expect(most).toBe(1);
    for (const c of (await changesOf(ids.slice(1))).filter((x) => x.from_blocked)) {
      expect(c).toMatchObject({ to_status: 'pending', to_blocked: false });
    }
  });
});

describe('an empty claim sent while a task of an ordering group runs', () => {
  it('is not taken for idleness when that task’s write unblocked the next head before the claim answered', async () => {
    const ran: number[] = [];
    const first = gate();
    let headRunning = false;
    const limit = defineLimit('handoff-idle', { concurrency: 1 });
    const step = defineTask<{ n: number }>('handoff-idle', {
      limit,
      handler: async ({ n }) => {
        if (n === 0) {
          headRunning = true;
          await first.wait;
        }
        ran.push(n);
      },
    });
    await enqueueMany(t.pool, step, [0, 1].map((n) => ({ payload: { n }, groupKey: 'idle' })));
    // the worker's first claim sent while the head runs answers only after the head's write has
    // committed, which unblocked the next head for the limit's claim
    const pool = new pg.Pool({ connectionString: t.url, max: 10 });
    const headWritten = gate();
    let held = false;
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | null)?.text ?? '');
        if (!/doomed AS/.test(text) || !headRunning || held) return query(...args);
        held = true;
        // once the claim has run (its snapshot could not see the next head), the head ends
        const answered = async () => {
          first.open();
          await headWritten.wait;
        };
        const callback = args.at(-1);
        if (typeof callback === 'function') {
          return query(...args.slice(0, -1), (error: unknown, result: unknown) => void answered().then(() => callback(error, result)));
        }
        return query(...args).then(async (result) => {
          await answered();
          return result;
        });
      };
    });
    try {
      const worker = track(createWorker({ pool, tasks: [step], concurrency: 4, listen: false, owner: 'w-idle' }));
      worker.on('task:succeeded', (e) => (e.task.payload as { n: number }).n === 0 && headWritten.open());
      const ranAtIdle = nextEvent(worker, 'worker:idle', () => true, 30_000).then(() => [...ran]);
      await worker.start();
      expect(await ranAtIdle).toEqual([0, 1]);
      await worker.stop();
    } finally {
      first.open();
      headWritten.open();
      await pool.end();
    }
  });
});
