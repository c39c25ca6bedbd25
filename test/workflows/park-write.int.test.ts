// A sleep, a signal wait and a children wait record and park in one round trip (issue 32): the
// lock at the task's token and the check-and-park in one message, two statements of one
// transaction. What must hold as before: the fence refuses a stale run's park, a signal or a
// child's end that commits while the park waits for the task's lock is seen (never parked past),
// and the worker learns by the database's clock when a parked run is due. Runs are driven
// through WorkflowRun with a claimed token, so the statements counted are the run's own.
import type pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { cancelTask, createWorker, defineLimit, defineSignal, defineTask, enqueue, enqueueMany, getTask, sendSignal, SuspendedError, taskTable, type TaskContext } from '@leasehold/core';
import { leaseClaim, leaseFinalizeMany, limitRegisterMany, toReleased } from '@leasehold/core/internal';
import { claimedRecords } from '../../packages/core/src/sql/claimed-records.js';
import { RUNNER_CONTROL, type HandlerContext } from '../../packages/core/src/worker/handler-context.js';
import { WorkflowRun } from '../../packages/core/src/workflow/workflow-run.js';
import { readTask, useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { countingPool as countingPoolOn } from '../counting-pool.js';

const t = useTestDatabase();
const track = useWorkers();
const table = taskTable();

const approved = defineSignal<{ by: string }>('approved');
const flow = defineTask('park-write-flow', { handler: () => undefined });
const kid = defineTask('park-write-kid', { handler: (p: { n: number }) => p.n });

/** Every query text the pool's clients send, one entry per round trip. */
function countingPool(options: pg.PoolConfig = {}): { pool: pg.Pool; sent: string[] } {
  return countingPoolOn(t.url, { max: 4, ...options });
}

/** A run of a freshly claimed task, with a context that records what the run tells the runner. */
async function claimedRun(pool: pg.Pool, def = flow, flows?: readonly string[]) {
  const handle = await enqueue(t.pool, def, {} as never);
  const { claimed } = await leaseClaim(t.pool, table, { owner: 'park-write', batch: 1, leaseMs: 60_000, names: [def.name], flows });
  const task = claimed.find((c) => c.id === handle.id);
  if (task === undefined) throw new Error('the task was not claimed');
  const told: { suspended: { reason: Error; dueInMs: number | undefined }[] } = { suspended: [] };
  const ctx = {
    signal: new AbortController().signal,
    extendLease: async () => undefined,
    onCommit: () => undefined,
    [RUNNER_CONTROL]: {
      suspended: (reason: Error, dueInMs?: number) => void told.suspended.push({ reason, dueInMs }),
      failed: () => undefined,
      onReturn: () => undefined,
    },
  } as unknown as HandlerContext;
  return { id: handle.id, task, told, run: new WorkflowRun(pool, table, task, ctx) };
}

const waitFor = async (id: string) =>
  (await sql<{ status: string; wait_for: string | null }>`SELECT status, wait_for FROM leasehold.task WHERE id = ${id}`.execute(t.db)).rows[0];

const stepRow = async (id: string, name: string) =>
  (await sql<{ done: boolean; wake_at: Date | null; result: unknown }>`SELECT done, wake_at, result FROM leasehold.task_step WHERE task_id = ${id} AND name = ${name}`.execute(t.db)).rows[0];

/** Resolves once some session of the test database waits for a row lock held by another. */
async function parkWaitsForLock(): Promise<void> {
  await expect
    .poll(async () => {
      const { rows } = await t.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR NO KEY UPDATE%'`,
      );
      return rows[0]!.n;
    }, { timeout: 10_000, interval: 10 })
    .toBe(1);
}

describe('a wait records and parks in one round trip', () => {
  it('a sleep: one message, no transaction of its own, no read of steps at a first claim; due in by the database clock', async () => {
    const { pool, sent } = countingPool();
    try {
      const { id, told, run } = await claimedRun(pool);
      await expect(run.sleep('nap', '10s')).rejects.toBeInstanceOf(SuspendedError);
      // the park alone: claimed at lease_version 1, the run has recorded nothing and does not ask
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/jsonb_to_recordset/);
      expect(sent.some((q) => /^\s*(BEGIN|COMMIT)/.test(q))).toBe(false);
      expect(await readTask(t.db, id)).toMatchObject({ status: 'waiting', leaseOwner: null, attempts: 0 });
      expect(await stepRow(id, 'nap')).toMatchObject({ done: false });
      expect(told.suspended).toHaveLength(1);
      const due = told.suspended[0]!.dueInMs!;
      expect(due).toBeGreaterThan(9_000);
      expect(due).toBeLessThanOrEqual(10_000);
    } finally {
      await pool.end();
    }
  });

  it('a signal wait with a timeout, one without, and a wait for children just spawned: one message each', async () => {
    const { pool, sent } = countingPool();
    try {
      const timed = await claimedRun(pool);
      sent.length = 0;
      await expect(timed.run.waitForSignal(approved, { timeout: '1h' })).rejects.toBeInstanceOf(SuspendedError);
      expect(sent).toHaveLength(1);
      expect(await readTask(t.db, timed.id)).toMatchObject({ status: 'waiting' });
      expect(timed.told.suspended[0]!.dueInMs).toBeGreaterThan(3_500_000);

      const open = await claimedRun(pool);
      sent.length = 0;
      await expect(open.run.waitForSignal(approved)).rejects.toBeInstanceOf(SuspendedError);
      expect(sent).toHaveLength(1);
      expect(open.told.suspended[0]!.dueInMs).toBeUndefined();

      const parent = await claimedRun(pool);
      const kids = await parent.run.spawn('kids', kid, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
      sent.length = 0;
      await expect(parent.run.waitForChildren(kids)).rejects.toBeInstanceOf(SuspendedError);
      // no read of the children it just spawned: they are open
      expect(sent).toHaveLength(1);
      expect(await readTask(t.db, parent.id)).toMatchObject({ status: 'waiting' });
      expect(parent.told.suspended[0]!.dueInMs).toBeUndefined();
    } finally {
      await pool.end();
    }
  });

  it('a wait that is over records its step done and goes on, in the same one message', async () => {
    const { pool, sent } = countingPool();
    try {
      const { id, told, run } = await claimedRun(pool);
      await sendSignalNow(id, { by: 'ann' });
      await expect(run.sleep('past', new Date(Date.now() - 1_000))).resolves.toBeUndefined();
      expect(await run.waitForSignal(approved, { timeout: '1h' })).toEqual({ timedOut: false, payload: { by: 'ann' } });
      expect(await run.waitForSignal(approved, { step: 'again', timeout: 0 })).toEqual({ timedOut: true });
      expect(sent).toHaveLength(3); // one message per wait (nothing read at a first claim)
      expect(told.suspended).toEqual([]);
      expect(await readTask(t.db, id)).toMatchObject({ status: 'processing' });
      expect(await stepRow(id, 'past')).toMatchObject({ done: true });
      expect(await stepRow(id, 'signal:approved')).toMatchObject({ done: true, result: { timedOut: false, payload: { by: 'ann' } } });
      expect(await stepRow(id, 'again')).toMatchObject({ done: true, result: { timedOut: true } });
    } finally {
      await pool.end();
    }
  });

  it('names with quotes, backslashes and control characters survive, with standard_conforming_strings off', async () => {
    const { pool } = countingPool({ options: '-c standard_conforming_strings=off' });
    const odd = `it's a "nap" \\ back\\slash \\' \u0001 line\nbreak 漢字 😀`;
    const signal = defineSignal<string>(`sig '\\' ${odd}`);
    try {
      const { id, run } = await claimedRun(pool);
      await expect(run.sleep(odd, '1h')).rejects.toBeInstanceOf(SuspendedError);
      expect(await stepRow(id, odd)).toMatchObject({ done: false });
      const other = await claimedRun(pool);
      await expect(other.run.waitForSignal(signal)).rejects.toBeInstanceOf(SuspendedError);
      expect(await waitFor(other.id)).toEqual({ status: 'waiting', wait_for: `signal:${signal.name}` });
    } finally {
      await pool.end();
    }
  });
});

describe('the park is fenced', () => {
  it("a run whose lease moved on parks nothing and writes no step; a cancelled run's park reports the cancel", async () => {
    const { pool } = countingPool();
    try {
      const stale = await claimedRun(pool);
      await t.pool.query(`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = $1`, [stale.id]);
      await expect(stale.run.sleep('nap', '1h')).rejects.toMatchObject({ code: 'LEASE_LOST' });
      await expect(stale.run.waitForSignal(approved, { timeout: '1h' })).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(await readTask(t.db, stale.id)).toMatchObject({ status: 'processing', attempts: 1 });
      expect(await stepRow(stale.id, 'nap')).toBeUndefined();
      expect(stale.told.suspended).toEqual([]);

      const cancelled = await claimedRun(pool);
      await cancelTask(t.pool, cancelled.id);
      await expect(cancelled.run.sleep('nap', '1h')).rejects.toMatchObject({ code: 'CANCELLED' });
      expect(await readTask(t.db, cancelled.id)).toMatchObject({ status: 'cancelled' });
      expect(await stepRow(cancelled.id, 'nap')).toBeUndefined();
    } finally {
      await pool.end();
    }
  });

  it('two waits of one run made together: one parks, the other finds it parked', async () => {
    const { pool } = countingPool();
    try {
      const { id, told, run } = await claimedRun(pool);
      const [a, b] = await Promise.allSettled([run.sleep('a', '1h'), run.waitForSignal(approved, { timeout: '1h' })]);
      const reasons = [a, b].map((r) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'resolved'));
      expect(reasons.sort()).toEqual(['LEASE_LOST', 'SUSPENDED']);
      expect(told.suspended).toHaveLength(1);
      expect(await readTask(t.db, id)).toMatchObject({ status: 'waiting' });
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_step WHERE task_id = ${id}`.execute(t.db);
      expect(rows[0]!.n).toBe(1);
    } finally {
      await pool.end();
    }
  });
});

describe('a park and what would end its wait, at the same time', () => {
  it('a signal committed while the park waits for the task lock is taken, not parked past', async () => {
    const { pool } = countingPool();
    const sender = await t.client();
    try {
      const { id, told, run } = await claimedRun(pool);
      // sendSignal locks the task row first (as it does), stores the signal, finds it processing
      await sender.query('BEGIN');
      await sender.query(`SELECT 1 FROM leasehold.task WHERE id = $1 FOR NO KEY UPDATE`, [id]);
      await sender.query(`INSERT INTO leasehold.task_signal (task_id, name, payload) VALUES ($1, 'approved', '{"by":"bob"}')`, [id]);
      const waited = run.waitForSignal(approved);
      await parkWaitsForLock();
      await sender.query('COMMIT');
      expect(await waited).toEqual({ timedOut: false, payload: { by: 'bob' } });
      expect(told.suspended).toEqual([]);
      expect(await readTask(t.db, id)).toMatchObject({ status: 'processing' });
    } finally {
      await sender.query('ROLLBACK').catch(() => undefined);
      await pool.end();
    }
  });

  it("a last child's end committed while the park waits for the parent's lock lets the parent go on", async () => {
    const { pool } = countingPool();
    const finisher = await t.client();
    try {
      const { id, told, run } = await claimedRun(pool);
      const kids = await run.spawn('kids', kid, [{ payload: { n: 7 } }]);
      // a finalize of the child: its end's trigger locks the parent, finds it processing
      await finisher.query('BEGIN');
      await finisher.query(`UPDATE leasehold.task SET status = 'done', result = '7' WHERE id = $1`, [kids[0]!.id]);
      const waited = run.waitForChildren(kids);
      await parkWaitsForLock();
      await finisher.query('COMMIT');
      expect(await waited).toEqual([7]);
      expect(told.suspended).toEqual([]);
      expect(await readTask(t.db, id)).toMatchObject({ status: 'processing' });
    } finally {
      await finisher.query('ROLLBACK').catch(() => undefined);
      await pool.end();
    }
  });

  it('a signal sent after the park wakes the task', async () => {
    const { pool } = countingPool();
    try {
      const { id, run } = await claimedRun(pool);
      await expect(run.waitForSignal(approved)).rejects.toBeInstanceOf(SuspendedError);
      await sendSignalNow(id, { by: 'cy' });
      expect(await waitFor(id)).toEqual({ status: 'pending', wait_for: null });
    } finally {
      await pool.end();
    }
  });
});

describe('on a worker', () => {
  it('100 sleeping runs: no transaction of their own, at most one park message per run, every run parked with its sleep open', async () => {
    const RUNS = 100;
    const napper = defineTask('park-write-napper', { handler: async (_p: { i: number }, ctx: TaskContext) => ctx.sleep('nap', '1h') });
    await enqueueMany(t.pool, napper, Array.from({ length: RUNS }, (_, i) => ({ payload: { i } })));
    const { pool, sent } = countingPool({ max: 10 });
    try {
      const worker = track(createWorker({ pool, tasks: [napper], concurrency: 8, pollInterval: 20 }));
      let parked = 0;
      const all = new Promise<void>((resolve) => worker.on('task:suspended', () => void (++parked === RUNS && resolve())));
      await worker.start();
      await all;
      await worker.stop();
    } finally {
      await pool.end();
    }
    const count = (re: RegExp) => sent.filter((q) => re.test(q)).length;
    expect(count(/^\s*BEGIN/)).toBe(0);
    // first claims: nothing recorded, nothing read
    expect(count(REPLAY_READ)).toBe(0);
    const parks = count(/jsonb_to_recordset/);
    expect(parks).toBeGreaterThan(0);
    expect(parks).toBeLessThanOrEqual(RUNS);
    const { rows } = await sql<{ waiting: number; open: number }>`
      SELECT (SELECT count(*)::int FROM leasehold.task WHERE name = ${napper.name} AND status = 'waiting') AS waiting,
             (SELECT count(*)::int FROM leasehold.task_step AS s JOIN leasehold.task AS t ON t.id = s.task_id
              WHERE t.name = ${napper.name} AND s.name = 'nap' AND NOT s.done AND s.wake_at > now()) AS open
    `.execute(t.db);
    expect(rows[0]).toEqual({ waiting: RUNS, open: RUNS });
  });

  it('100 runs woken from their sleeps: each claim brings its runs\' records and closes their sleeps, so no replay read and no park message goes out on the wake', async () => {
    const RUNS = 100;
    const started = new Set<number>();
    const napper = defineTask('park-write-waker', {
      handler: async (p: { i: number }, ctx: TaskContext) => {
        await ctx.sleep('nap', '300ms');
        await ctx.step('after', () => void started.add(p.i));
      },
    });
    const { pool, sent } = countingPool({ max: 10 });
    let ids: string[] = [];
    try {
      const worker = track(createWorker({ pool, tasks: [napper], concurrency: 50, pollInterval: 20 }));
      let done = 0;
      const all = new Promise<void>((resolve) => worker.on('task:succeeded', () => void (++done === RUNS && resolve())));
      await worker.start();
      ids = (await enqueueMany(t.pool, napper, Array.from({ length: RUNS }, (_, i) => ({ payload: { i } })))).map((r) => r.id);
      await all;
      await worker.stop();
    } finally {
      await pool.end();
    }
    expect(started.size).toBe(RUNS);
    const count = (re: RegExp) => sent.filter((q) => re.test(q)).length;
    // a parked run is claimed from where nobody holds it: the claim's read is complete
    expect(count(REPLAY_READ)).toBe(0);
    // each run's park went out once, when it began to sleep: its wake found the sleep closed by
    // the claim, and sent no park message to close it
    const parks = sent.filter((q) => /jsonb_to_recordset/.test(q));
    const parksOf = (id: string) => parks.filter((q) => q.includes(`"task_id":"${id}"`)).length;
    expect(ids.filter((id) => parksOf(id) !== 1)).toEqual([]);
    const { rows } = await sql<{ n: number; closed: number }>`
      SELECT count(*)::int AS n, count(*) FILTER (WHERE s.done AND s.done_at >= s.wake_at)::int AS closed
      FROM leasehold.task_step AS s JOIN leasehold.task AS t ON t.id = s.task_id
      WHERE t.name = ${napper.name} AND s.name = 'nap'
    `.execute(t.db);
    expect(rows[0]).toEqual({ n: RUNS, closed: RUNS });
  });
});

describe('a run taken over from an expired lease', () => {
  // under a limit of 64 or more, kept in stripes, the takeover is the stripes' own source
  const limits = { 'no limit': undefined, 'a limit kept in stripes': defineLimit('park-write-striped', { concurrency: 64 }) };
  it.each(Object.entries(limits))('reads its records after the claim (its holder may still be writing), and does not run a recorded step again: %s', async (_, limit) => {
    let ran = 0;
    const def = defineTask(`park-write-takeover${limit === undefined ? '' : '-limited'}`, {
      ...(limit === undefined ? {} : { limit }),
      handler: async (_p: Record<string, never>, ctx: TaskContext) => {
        await ctx.step('a', () => ++ran);
        await ctx.step('b', () => 'b');
      },
    });
    const flows = limit === undefined ? undefined : await limitRegisterMany(t.pool, table, 'park-write', [{ limit, taskNames: [def.name] }], [def.name]);
    if (limit !== undefined) {
      const striped = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_limit_stripe WHERE name = ${limit.name}`.execute(t.db);
      expect(striped.rows[0]!.n).toBeGreaterThan(0);
    }
    // a first lease records 'a', then its holder stalls: its lease runs out
    const { id, run } = await claimedRun(t.pool, def as unknown as typeof flow, flows);
    expect(await run.step('a', () => ++ran)).toBe(1);
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second' WHERE id = ${id}`.execute(t.db);
    const { pool, sent } = countingPool({ max: 4 });
    try {
      const worker = track(createWorker({ pool, tasks: [def], pollInterval: 20 }));
      const done = new Promise<void>((resolve) => worker.on('task:succeeded', () => resolve()));
      await worker.start();
      await done;
      await worker.stop();
    } finally {
      await pool.end();
    }
    expect(ran).toBe(1);
    expect(sent.filter((q) => REPLAY_READ.test(q)).length).toBe(1);
    expect(await readTask(t.db, id)).toMatchObject({ status: 'done', attempts: 2 });
  });
});

describe('a claim under a limit kept in stripes', () => {
  // the whole claim statement and the striped-only one a worker sends first
  it.each([false, true])('hands a released run its records, and a run taken over from an expired lease none (stripedOnly: %s)', async (stripedOnly) => {
    const limit = defineLimit(`park-write-stripes-${stripedOnly}`, { concurrency: 64 });
    const def = defineTask(`park-write-striped-claim-${stripedOnly}`, {
      limit,
      handler: async (_p: Record<string, never>, ctx: TaskContext) => {
        await ctx.step('a', () => 'a');
      },
    });
    const flows = await limitRegisterMany(t.pool, table, 'park-write', [{ limit, taskNames: [def.name] }], [def.name]);
    // as the worker claims: again while a claim promoted rows that came due (a released row does)
    const claim = async (id: string) => {
      for (let i = 0; i < 3; i++) {
        const { claimed } = await leaseClaim(t.pool, table, { owner: 'park-write', batch: 8, leaseMs: 60_000, names: [def.name], flows, stripedOnly });
        const row = claimed.find((c) => c.id === id);
        if (row !== undefined) return row;
      }
      throw new Error('the run was not claimed again');
    };
    const released = await claimedRun(t.pool, def as unknown as typeof flow, flows);
    await released.run.step('a', () => 'a');
    await leaseFinalizeMany(t.pool, table, [{ id: released.id, leaseVersion: released.task.leaseVersion, transition: toReleased('shutdown'), groupKey: null }]);
    expect([...(claimedRecords.get(await claim(released.id))?.keys() ?? [])]).toEqual(['a']);
    const taken = await claimedRun(t.pool, def as unknown as typeof flow, flows);
    await taken.run.step('a', () => 'a');
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second' WHERE id = ${taken.id}`.execute(t.db);
    expect(claimedRecords.get(await claim(taken.id))).toBeUndefined();
  });
});

describe('the timeline after a takeover and a wake', () => {
  it('shows each call once, at its position, under the lease that recorded it', async () => {
    const def = defineTask('park-write-timeline', {
      handler: async (_p: Record<string, never>, ctx: TaskContext) => {
        await ctx.step('a', () => 'a');
        await ctx.sleep('nap', '100ms');
        await ctx.step('b', () => 'b');
      },
    });
    // the first lease records 'a' and stalls; a worker takes the run over, sleeps, is woken
    const { id, run } = await claimedRun(t.pool, def as unknown as typeof flow);
    await run.step('a', () => 'a');
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second' WHERE id = ${id}`.execute(t.db);
    const worker = track(createWorker({ pool: t.pool, tasks: [def], pollInterval: 20 }));
    const done = new Promise<void>((resolve) => worker.on('task:succeeded', ({ task }) => void (task.id === id && resolve())));
    await worker.start();
    await done;
    await worker.stop();
    const info = (await getTask(t.pool, id))!;
    const steps = info.timeline.filter((e) => e.type === 'step');
    expect(steps.map((e) => [e.name, e.kind, e.position, e.done, e.leaseVersion])).toEqual([
      ['a', 'step', 0, true, 1], // the first lease's
      ['nap', 'sleep', 1, true, 3], // opened by the takeover (2), closed by the claim that woke it (3)
      ['b', 'step', 2, true, 3],
    ]);
    const nap = steps[1]!;
    expect(nap.doneAt!.getTime()).toBeGreaterThanOrEqual(nap.wakeAt!.getTime());
    expect(info.status).toBe('done');
  });
});

/** A run's replay read of its own (taskStepsReadMany), apart from a claim. */
const REPLAY_READ = /\bwoke AS \(\s*UPDATE "leasehold"."task_step"/;

async function sendSignalNow(id: string, payload: { by: string }): Promise<void> {
  await sendSignal(t.pool, id, approved, payload);
}
