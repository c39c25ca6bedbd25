import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { enqueueMany, sendSignal } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { approve, deployFlow, type Code, type DeployResult } from './deploy-flow.js';

// A rolling deploy under 200 runs in flight across sleeps and signals: a process with the old
// code and one with the new (a patch and a version bump) run side by side, then the old one
// stops. Every run must finish on code that can run it, with the right result.

const t = useTestDatabase();
const RUNS = 100; // per code

interface Proc {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  out: string;
}

function startWorker(code: Code): Proc {
  const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', 'test/workflows/deploy-worker.ts', t.url, code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const proc: Proc = {
    child,
    out: '',
    ready: new Promise<void>((resolve, reject) => {
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        proc.out += chunk;
        if (proc.out.includes('ready\n')) resolve();
      });
      child.once('exit', (c, s) => reject(new Error(`deploy worker (${code}) exited before it was ready (${c ?? s})`)));
    }),
  };
  return proc;
}

async function stop(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = once(p.child, 'exit');
  p.child.kill('SIGTERM');
  await exited;
}

async function counts(): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM leasehold.task GROUP BY status`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

async function waitingFor(what: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE status = 'waiting' AND wait_for = ${what}`.execute(t.db);
  return Number(rows[0]!.n);
}

/** Ends these runs' sleep now (its recorded wake time and the parked row's), as if the hour had passed. */
async function wake(ids: readonly string[]): Promise<void> {
  await sql`UPDATE leasehold.task_step SET wake_at = now() WHERE task_id = ANY(${ids}::bigint[]) AND name = 'cool'`.execute(t.db);
  await sql`UPDATE leasehold.task SET available_at = now() WHERE id = ANY(${ids}::bigint[]) AND status = 'waiting'`.execute(t.db);
}

async function until(what: string, ok: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms (${JSON.stringify(await counts())})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a rolling deploy', () => {
  it('200 runs across sleeps and signals finish on workers that can run them, old and new side by side', { timeout: 240_000 }, async () => {
    const old = startWorker('old');
    let fresh: Proc | undefined;
    try {
      await old.ready;
      // the old code starts 100 runs: half sleep briefly (past the patch's point on the old code
      // before the new code exists), half sleep until the test wakes them during the deploy
      const brief = await enqueueMany(t.pool, deployFlow('old'), Array.from({ length: RUNS / 2 }, (_, n) => ({ payload: { n, napMs: 300 } })));
      const long = await enqueueMany(t.pool, deployFlow('old'), Array.from({ length: RUNS / 2 }, (_, n) => ({ payload: { n: RUNS / 2 + n, napMs: 3_600_000 } })));
      const before = [...brief, ...long];
      await until('the brief sleepers waiting for approval', async () => (await waitingFor('signal:approve')) === brief.length, 30_000);
      await until('the long sleepers asleep', async () => (await waitingFor('sleep')) === long.length, 30_000);

      // the deploy begins: a worker of the new code joins, and new runs start on the new version
      fresh = startWorker('new');
      await fresh.ready;
      const after = await enqueueMany(t.pool, deployFlow('new'), Array.from({ length: RUNS }, (_, n) => ({ payload: { n: RUNS + n, napMs: 200 + ((n * 37) % 1000) } })));
      // half the long sleepers wake while both codes run: either may take them on
      await wake(long.slice(0, long.length / 2).map((r) => r.id));
      // approvals arrive while runs sleep, wait, or have not started
      for (const [i, run] of [...before, ...after].entries()) {
        await sendSignal(t.pool, run, approve, { ok: true });
        if (i % 50 === 49) await new Promise((r) => setTimeout(r, 100));
      }
      await until('a quarter of the runs done', async () => ((await counts()).done ?? 0) >= RUNS / 2, 60_000);
      // the deploy ends: the old code stops; the rest wake on the new code alone
      await stop(old);
      await wake(long.slice(long.length / 2).map((r) => r.id));
      await until('every run done', async () => ((await counts()).done ?? 0) === 2 * RUNS, 90_000);

      const { rows } = await sql<{ id: string; version: number; result: DeployResult; patch: boolean | null }>`
        SELECT t.id, t.version, t.result,
               (SELECT s.result::boolean FROM leasehold.task_step AS s WHERE s.task_id = t.id AND s.name = 'patch:fraud-check') AS patch
        FROM leasehold.task AS t ORDER BY t.id`.execute(t.db);
      expect(rows).toHaveLength(2 * RUNS);
      const byId = new Map(rows.map((r) => [String(r.id), r]));
      for (const run of after) {
        // started on the new version: only the new code ever ran it, and it took the new path
        const r = byId.get(run.id)!;
        expect(r.version).toBe(2);
        expect(r.patch).toBe(true);
        expect(r.result.by).toEqual({ reserve: 'new', fraud: 'new', ship: 'new' });
      }
      for (const [n, run] of before.entries()) {
        const r = byId.get(run.id)!;
        expect(r.result.n).toBe(n);
        expect(r.result.by.reserve).toBe('old');
        if (r.patch === true) {
          // reached the patch on the new code: from there on, only the new code ran it
          expect(r.version).toBe(2);
          expect(r.result.by).toEqual({ reserve: 'old', fraud: 'new', ship: 'new' });
        } else {
          // went past that point on the old code: the old path, on either code
          expect(r.version).toBe(1);
          expect(r.result.by.fraud).toBeUndefined();
        }
      }
      // past the patch's point on the old code before the new code existed: never patched
      for (const run of brief) expect(byId.get(run.id)!.patch).not.toBe(true);
      // woken after the old code stopped: the new code met the patch fresh
      for (const run of long.slice(long.length / 2)) expect(byId.get(run.id)!.patch).toBe(true);
      // no worker was ever handed a run of a version its code does not declare
      expect(old.out).not.toContain('violation');
      expect(fresh.out).not.toContain('violation');
    } finally {
      await stop(old);
      if (fresh !== undefined) await stop(fresh);
    }
  });
});
