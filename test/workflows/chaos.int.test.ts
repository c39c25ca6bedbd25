// The five-step workflow of chaos-flow.ts in real worker processes that the test SIGKILLs at
// random points, or freezes (SIGSTOP) past their lease and resumes. Each step must be recorded
// exactly once; the database step's row must exist exactly once per workflow; a plain step's
// side effect may repeat only where the process that made it died before the step was recorded.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { enqueueMany } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { chaosFlow, STEPS } from './chaos-flow.js';

const t = useTestDatabase();

interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly ready: Promise<void>;
  out: string;
}

function startWorker(url: string): Proc {
  const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', 'test/workflows/chaos-worker.ts', url], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const proc: Proc = {
    child,
    pid: child.pid!,
    out: '',
    ready: new Promise<void>((resolve, reject) => {
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        proc.out += chunk;
        if (proc.out.includes('ready\n')) resolve();
      });
      child.once('exit', (code, signal) => reject(new Error(`worker ${child.pid} exited before it was ready (${code ?? signal})`)));
    }),
  };
  proc.ready.catch(() => undefined); // a worker killed while starting is not a failure
  return proc;
}

async function stopAll(procs: Iterable<Proc>): Promise<void> {
  await Promise.all(
    [...procs].map(async (p) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) return;
      const exited = once(p.child, 'exit');
      p.child.kill('SIGCONT');
      p.child.kill('SIGTERM');
      await exited;
    }),
  );
}

async function doneCount(): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE status = 'done'`.execute(t.db);
  return Number(rows[0]!.n);
}

async function setUp(runs: number): Promise<string[]> {
  await sql`DROP TABLE IF EXISTS chaos_effect, chaos_ledger`.execute(t.db);
  await sql`TRUNCATE leasehold.task`.execute(t.db);
  await sql`CREATE TABLE chaos_effect (task_id bigint NOT NULL, step text NOT NULL, pid int NOT NULL)`.execute(t.db);
  await sql`CREATE TABLE chaos_ledger (task_id bigint NOT NULL, pid int NOT NULL)`.execute(t.db);
  const inserted = await enqueueMany(t.pool, chaosFlow(t.pool), Array.from({ length: runs }, (_, n) => ({ payload: { n } })));
  return inserted.map((r) => r.id);
}

/** Checks every run's steps, database rows and effects; returns the effects that repeated. */
async function checkRuns(ids: readonly string[], died: ReadonlySet<number>): Promise<number> {
  const { rows: tasks } = await sql<{ id: string; status: string; result: { n: number; pids: number[] } }>`
    SELECT id, status, result FROM leasehold.task ORDER BY id`.execute(t.db);
  expect(tasks.map((r) => r.status)).toEqual(ids.map(() => 'done'));
  expect(tasks.map((r) => r.result.n)).toEqual(ids.map((_, n) => n));

  const { rows: steps } = await sql<{ task_id: string; name: string; done: boolean; result: { pid: number } }>`
    SELECT task_id, name, done, result FROM leasehold.task_step ORDER BY task_id, name`.execute(t.db);
  expect(steps).toHaveLength(ids.length * STEPS.length);
  expect(steps.every((s) => s.done)).toBe(true);
  const recorder = new Map(steps.map((s) => [`${s.task_id}/${s.name}`, s.result.pid]));
  // what the workflow returned is what its steps recorded, replays included
  for (const task of tasks) expect(task.result.pids).toEqual(STEPS.map((s) => recorder.get(`${task.id}/${s}`)));

  // the database step: exactly one row per workflow, written by the process that recorded it
  const { rows: ledger } = await sql<{ task_id: string; pid: number }>`SELECT task_id, pid FROM chaos_ledger ORDER BY task_id`.execute(t.db);
  expect(ledger.map((r) => r.task_id)).toEqual([...ids]);
  for (const row of ledger) expect(row.pid).toBe(recorder.get(`${row.task_id}/c`));

  // plain steps: the recording run's effect once, and extra effects only from processes that died
  const { rows: effects } = await sql<{ task_id: string; step: string; pid: number }>`SELECT task_id, step, pid FROM chaos_effect`.execute(t.db);
  let repeated = 0;
  const seen = new Map<string, number>();
  for (const e of effects) {
    const key = `${e.task_id}/${e.step}`;
    const recordedBy = recorder.get(key);
    if (e.pid === recordedBy && !seen.has(key)) seen.set(key, 1);
    else {
      repeated++;
      expect(died.has(e.pid), `effect of ${key} repeated by ${e.pid}, which did not die (recorded by ${recordedBy})`).toBe(true);
    }
  }
  expect(seen.size).toBe(ids.length * (STEPS.length - 1));
  return repeated;
}

describe('a five-step workflow in worker processes under faults', () => {
  it('200 runs with workers SIGKILLed at random points: every run completes, each step recorded once, database rows exactly once', { timeout: 400_000 }, async () => {
    const ids = await setUp(200);
    const procs = new Map<number, Proc>();
    const killed = new Set<number>();
    const add = () => {
      const p = startWorker(t.url);
      procs.set(p.pid, p);
      return p;
    };
    try {
      await Promise.all([add(), add(), add()].map((p) => p.ready));
      const deadline = Date.now() + 300_000;
      // a worker dies every 5-15 runs done, at whatever point it has reached: kills follow the
      // runs' progress, not the clock, so a fast machine that finishes in seconds kills as many
      // (one kill every 150-600 ms once let 200 runs finish after 5 kills)
      const spacing = ids.length / 20;
      let killAt = 0;
      for (let done = await doneCount(); done < ids.length; done = await doneCount()) {
        if (Date.now() > deadline) throw new Error(`only ${done} of ${ids.length} runs done`);
        if (done >= killAt && killed.size < 40) {
          const live = [...procs.values()].filter((p) => !killed.has(p.pid));
          const victim = live[Math.floor(Math.random() * live.length)]!;
          killed.add(victim.pid);
          victim.child.kill('SIGKILL');
          add();
          killAt = done + spacing * (0.5 + Math.random());
        }
        await new Promise((r) => setTimeout(r, 20 + Math.random() * 60));
      }
    } finally {
      await stopAll(procs.values());
    }
    const repeated = await checkRuns(ids, killed);
    const lost = [...procs.values()].reduce((n, p) => n + (p.out.match(/^lost /gm)?.length ?? 0), 0);
    console.log(`[workflow chaos] 200 runs, ${killed.size} workers SIGKILLed: ${repeated} plain-step effects repeated (each by a process that died before recording it), ${lost} leases lost in surviving workers`);
    expect(killed.size).toBeGreaterThan(5);
  });

  it('60 runs with a worker frozen (SIGSTOP) past its lease and resumed, three times: database rows exactly once', { timeout: 300_000 }, async () => {
    const ids = await setUp(60);
    const steady = startWorker(t.url);
    const frozen = startWorker(t.url);
    try {
      await Promise.all([steady.ready, frozen.ready]);
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
        frozen.child.kill('SIGSTOP');
        // past the 1.5 s lease: the steady worker takes the frozen one's tasks over
        await new Promise((r) => setTimeout(r, 2_500));
        frozen.child.kill('SIGCONT');
      }
      const deadline = Date.now() + 200_000;
      while ((await doneCount()) < ids.length) {
        if (Date.now() > deadline) throw new Error(`only ${await doneCount()} of ${ids.length} runs done`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await stopAll([steady, frozen]);
    }
    // nobody died: every effect of a plain step that repeated came from a run whose lease moved on,
    // which checkRuns allows only for the processes named here
    const repeated = await checkRuns(ids, new Set([frozen.pid, steady.pid]));
    const lostByFrozen = frozen.out.match(/^lost /gm)?.length ?? 0;
    console.log(`[workflow chaos] 60 runs, a worker frozen 3 × 2.5 s: ${lostByFrozen} of its leases lost, ${repeated} plain-step effects repeated, database step rows exactly one per run`);
  });
});
