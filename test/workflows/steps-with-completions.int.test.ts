// When some of a worker's workflow runs end while others record a step, the completions and the
// step records go out in one statement (one commit, not two side by side). Each part must keep
// its own fence: a step is recorded, and a run written done, only under the token its claim
// handed out. And a statement that fails takes neither part silently: the step records fail as
// a batch of them fails alone (the run's attempt ends and retries), and the completions are
// written again — read as written when the first statement had committed with its answer lost.
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueueMany, getTask, taskTable, waitForResult, type TaskContext } from '@leasehold/core';
import { leaseClaim, stepsAndDoneWrite, toDone } from '@leasehold/core/internal';
import { countingPool } from '../counting-pool.js';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const table = taskTable();

/** Records steps and writes runs done in one statement (the text of `stepsAndDoneWrite`). */
const carriesBoth = (text: string) => text.includes('INSERT INTO "leasehold"."task_step"') && text.includes("status = 'done'");

type Fault = 'none' | 'unsent' | 'answer-lost';

/**
 * A pool that records each statement's text; the first statement that carries both steps and
 * completions fails once, as `fault` says: before it is sent, or after it committed (its answer
 * lost, as when the connection drops while the reply is on its way).
 */
function faultyPool(fault: Fault): { pool: pg.Pool; sent: string[] } {
  let failed = false;
  const once = (kind: Fault) => (text: string) => {
    if (fault !== kind || failed || !carriesBoth(text)) return undefined;
    failed = true;
    return new Error(`connection lost (test: ${fault})`);
  };
  return countingPool(t.url, {}, once('unsent'), once('answer-lost'));
}

/** Runs of one to five steps, so that some end while others still record theirs. */
function runsOfSeveralLengths(name: string, calls: Map<string, number>) {
  return defineTask(name, {
    maxAttempts: 3,
    backoff: { base: '1ms', cap: '5ms' },
    handler: async (p: { n: number; steps: number }, ctx: TaskContext) => {
      let sum = 0;
      for (let k = 0; k < p.steps; k++) {
        sum += await ctx.step(`s${k}`, () => {
          const key = `${p.n}/s${k}`;
          calls.set(key, (calls.get(key) ?? 0) + 1);
          return p.n * 10 + k;
        });
      }
      return { n: p.n, sum };
    },
  });
}

const expectedSum = (n: number, steps: number) => Array.from({ length: steps }, (_, k) => n * 10 + k).reduce((a, b) => a + b, 0);

async function runAll(fault: Fault, name: string) {
  const calls = new Map<string, number>();
  const flow = runsOfSeveralLengths(name, calls);
  const payloads = Array.from({ length: 48 }, (_, n) => ({ n, steps: 1 + (n % 5) }));
  const handles = await enqueueMany(t.pool, flow, payloads.map((payload) => ({ payload })));
  const { pool, sent } = faultyPool(fault);
  try {
    const worker = track(createWorker({ pool, tasks: [flow], concurrency: 8, pollInterval: 50 }));
    const lost: string[] = [];
    worker.on('task:lease-lost', ({ task }) => lost.push(task.id));
    await worker.start();
    const results = await Promise.all(handles.map((h) => waitForResult(t.pool, h, { timeout: '60s' })));
    await worker.stop();
    expect(results).toEqual(payloads.map((p) => ({ n: p.n, sum: expectedSum(p.n, p.steps) })));
    for (const [i, h] of handles.entries()) {
      const info = await getTask(t.pool, h);
      expect(info?.status).toBe('done');
      expect(info?.steps.map((s) => [s.name, s.done, s.result])).toEqual(Array.from({ length: payloads[i]!.steps }, (_, k) => [`s${k}`, true, i * 10 + k]));
    }
    return { calls, sent, lost };
  } finally {
    await pool.end();
  }
}

describe('step records and completions in one statement', () => {
  it('each part is written only under its own token, and each item is told which', async () => {
    const flow = defineTask('steps-done-fence', { handler: () => {} });
    const made = await enqueueMany(t.pool, flow, Array.from({ length: 4 }, () => ({ payload: {} })));
    const ids = made.map((m) => m.id);
    const first = (await leaseClaim(t.pool, table, { owner: 'a', batch: 4, leaseMs: 3_600_000 })).claimed;
    expect(first.map((c) => c.id).sort()).toEqual([...ids].sort());
    const byId = new Map(first.map((c) => [c.id, c]));
    // tasks 2 and 3 are taken over by another worker: their first tokens are stale
    await t.pool.query("UPDATE leasehold.task SET lease_until = now() - interval '1 second' WHERE id = ANY($1::bigint[])", [[ids[2], ids[3]]]);
    const second = (await leaseClaim(t.pool, table, { owner: 'b', batch: 2, leaseMs: 3_600_000 })).claimed;
    expect(second.map((c) => c.id).sort()).toEqual([ids[2], ids[3]].sort());
    const current = new Map(second.map((c) => [c.id, c]));

    const step = (id: string, leaseVersion: number, name: string) => ({ taskId: id, leaseVersion, name, resultJson: JSON.stringify({ name }), position: 0 });
    const written = await stepsAndDoneWrite(
      t.pool,
      table,
      [step(ids[0]!, byId.get(ids[0]!)!.leaseVersion, 'ok'), step(ids[2]!, byId.get(ids[2]!)!.leaseVersion, 'stale'), step(ids[3]!, current.get(ids[3]!)!.leaseVersion, 'taken-over')],
      // out of id order, a stale token first
      [
        { id: ids[2]!, leaseVersion: byId.get(ids[2]!)!.leaseVersion, transition: toDone('{"by":"a"}'), groupKey: null, parentId: null },
        { id: ids[1]!, leaseVersion: byId.get(ids[1]!)!.leaseVersion, transition: toDone('{"by":"a"}'), groupKey: null, parentId: null },
      ],
    );
    expect([...written.steps].sort()).toEqual([`${ids[0]}/ok`, `${ids[3]}/taken-over`].sort());
    expect(written.done).toEqual([
      { id: ids[2], won: false, status: null },
      { id: ids[1], won: true, status: 'done' },
    ]);

    const { rows: steps } = await t.pool.query<{ task_id: string; name: string; result: unknown }>(
      'SELECT task_id, name, result FROM leasehold.task_step WHERE task_id = ANY($1::bigint[]) ORDER BY task_id, name',
      [ids],
    );
    expect(steps).toEqual(
      [
        { task_id: ids[0], name: 'ok', result: { name: 'ok' } },
        { task_id: ids[3], name: 'taken-over', result: { name: 'taken-over' } },
      ].sort((a, b) => Number(a.task_id) - Number(b.task_id)),
    );
    const { rows: tasks } = await t.pool.query<{ id: string; status: string; lease_owner: string | null; result: unknown }>(
      'SELECT id, status, lease_owner, result FROM leasehold.task WHERE id = ANY($1::bigint[])',
      [ids],
    );
    const state = new Map(tasks.map((r) => [r.id, r]));
    expect(state.get(ids[1]!)).toMatchObject({ status: 'done', lease_owner: null, result: { by: 'a' } });
    expect(state.get(ids[2]!)).toMatchObject({ status: 'processing', lease_owner: 'b', result: null });
    expect(state.get(ids[0]!)).toMatchObject({ status: 'processing', lease_owner: 'a' });

    // the same statement again: the step is already recorded and the run already done
    const again = await stepsAndDoneWrite(t.pool, table, [step(ids[0]!, byId.get(ids[0]!)!.leaseVersion, 'ok')], [
      { id: ids[1]!, leaseVersion: byId.get(ids[1]!)!.leaseVersion, transition: toDone('{"by":"again"}'), groupKey: null, parentId: null },
    ]);
    expect(again.steps.size).toBe(0);
    expect(again.done).toEqual([{ id: ids[1], won: false, status: null }]);
    const { rows: after } = await t.pool.query<{ result: unknown }>('SELECT result FROM leasehold.task WHERE id = $1', [ids[1]]);
    expect(after[0]?.result).toEqual({ by: 'a' });
  });

  it('a worker whose runs end while others record steps sends both in one statement; every run and step as written alone', async () => {
    const { calls, sent, lost } = await runAll('none', 'steps-done-mixed');
    expect(sent.filter(carriesBoth).length).toBeGreaterThan(0);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(lost).toEqual([]);
  });

  it('a statement that fails unsent: its runs record their step on the next attempt, and its completions are written again', async () => {
    const { calls, sent, lost } = await runAll('unsent', 'steps-done-unsent');
    expect(sent.filter(carriesBoth).length).toBeGreaterThan(0);
    // the step whose record failed ran again on its run's next attempt; no other did
    expect([...calls.values()].filter((n) => n === 2).length).toBeGreaterThanOrEqual(1);
    expect([...calls.values()].every((n) => n <= 2)).toBe(true);
    expect(lost).toEqual([]);
  });

  it('a statement that committed with its answer lost: its completions are read as written, not as lost leases', async () => {
    const { calls, sent, lost } = await runAll('answer-lost', 'steps-done-lost');
    expect(sent.filter(carriesBoth).length).toBeGreaterThan(0);
    // its steps were recorded: the runs' next attempts replay them instead of running them again
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(lost).toEqual([]);
  });
});
