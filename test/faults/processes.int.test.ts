// Process-level faults: real worker processes (worker-process.ts) over one task table, while the
// test SIGKILLs them, cuts their database connections, or freezes and stalls them. After each
// scenario the end state is checked against the guarantees (fault-db.ts) and a summary line is
// printed: `faults: <scenario>: tasks=N kills=K duplicates=D stale-refused=S lost=0`.
//
// Sizes: FAULTS_TASKS (default 5000, what CI runs) for the kill scenario, half of it for the
// connection loss, a tenth (at least 200) for the stalled, frozen and slow handlers.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { checkFaultOutcome, checkGroupOrder, installFaultTables, seedFaultTasks, unfinished, type FaultTally } from './fault-db.js';
import { Fleet } from './fleet.js';
import { envInt, summary } from './summary.js';

const t = useTestDatabase();
const TASKS = envInt('FAULTS_TASKS', 5_000);
const HALF = Math.max(500, Math.round(TASKS / 2));
const SMALL = Math.max(200, Math.round(TASKS / 10));
const LEASE_MS = 2_000;
const POLL_MS = 250;

let fleet: Fleet | undefined;
beforeAll(() => installFaultTables(t.db));
afterEach(async () => {
  await fleet?.destroy();
  fleet = undefined;
});

/** Runs `fault` repeatedly (with its own pauses) until every task is done or the hang guard trips. */
async function untilDone(tasks: number, fault: () => Promise<void>): Promise<void> {
  // a hang guard, not a speed claim: generous for a loaded 2-core machine
  const deadline = Date.now() + 60_000 + tasks * 40;
  for (;;) {
    const left = await unfinished(t.db);
    if (left === 0) return;
    if (Date.now() > deadline) throw new Error(`faults: hang guard: ${left} of ${tasks} tasks not done`);
    await fault();
  }
}

function report(scenario: string, tally: FaultTally, faults: Record<string, number>): void {
  summary(scenario, {
    tasks: tally.tasks,
    ...faults,
    duplicates: tally.duplicates,
    'stale-refused': tally.staleRefused,
    'stale-aborted': tally.staleAborted,
    takeovers: tally.takeovers,
    'max-takeover-lag-ms': tally.maxTakeoverLagMs,
    lost: tally.lost,
  });
}

/**
 * The fleet ended cleanly: no crash, no unhandled rejection, nothing on stderr. And no lost
 * lease went unlogged: each `task:lease-lost` came with a warning from the worker's logger.
 */
function expectNoCrash(f: Fleet): void {
  expect(f.crashes(), 'worker processes that crashed or wrote to stderr').toEqual([]);
  expect(f.live).toEqual([]);
  const warned = new Set(f.events.filter((e) => e.e === 'log' && e.level === 'warn').map((e) => `${e.pid}:${e.id}@${e.v}`));
  const killed = new Set(f.exits.filter((x) => x.killed).map((x) => x.pid));
  const unlogged = f.events.filter((e) => e.e === 'lost' && !killed.has(e.pid) && !warned.has(`${e.pid}:${e.id}@${e.v}`));
  expect(unlogged, 'lost leases without a log line').toEqual([]);
}

const random = (min: number, max: number) => min + Math.random() * (max - min);

/** Worker process options shared by the scenarios: 2 handlers of up to 40 ms each per process. */
function workerArgs(app: string, lease = LEASE_MS, extra: string[] = []): string[] {
  return ['--app', app, '--lease', String(lease), '--poll', String(POLL_MS), '--concurrency', '2', '--max-sleep', '40', ...extra];
}

describe('real worker processes under faults', () => {
  it('killed workers: SIGKILLed again and again, replaced; every task done, none lost, duplicates only after a lease moved on, each ordering group in order', { timeout: 600_000 }, async () => {
    // a twelfth of them in ordering groups of about 10: a worker that finishes a group's head takes
    // the next one in the same write, so kills also land on rows handed over that way
    const grouped = { rows: Math.floor(TASKS / 12), groups: Math.max(1, Math.floor(TASKS / 120)) };
    await seedFaultTasks(t.db, TASKS, [], grouped);
    const f = (fleet = new Fleet(t.url, workerArgs('lh-fault-kill')));
    await Promise.all([f.spawn(), f.spawn(), f.spawn()]);
    let kills = 0;
    // warm spares replace a killed worker at once; a process boot takes seconds on a busy machine
    const spares = new Set([f.spawn({ standby: true })]);
    await untilDone(TASKS, async () => {
      const victim = f.live[Math.floor(Math.random() * f.live.length)];
      const spare = f.spares[0];
      if (victim !== undefined && spare !== undefined) {
        await f.kill(victim);
        kills++;
        await f.activate(spare);
        const next = f.spawn({ standby: true });
        spares.add(next);
        void next.finally(() => spares.delete(next));
      }
      await sleep(random(100, 500)); // the fault schedule: a crash every few hundred ms
    });
    await Promise.all(spares); // a spare still booting would miss the SIGTERM
    await f.stopAll();
    expectNoCrash(f);
    const tally = await checkFaultOutcome(t.db, f.events);
    expect(await checkGroupOrder(t.db)).toBe(grouped.rows);
    report('killed-workers', tally, { kills });
    expect(kills).toBeGreaterThan(0);
    // a crashed worker's tasks are taken over within a lease of their expiry, not an hour later
    expect(tally.maxTakeoverLagMs).toBeLessThan(LEASE_MS + POLL_MS);
  });

  it('database connection loss: every backend of the workers terminated, repeatedly; they back off, reconnect, re-LISTEN and finish', { timeout: 300_000 }, async () => {
    await seedFaultTasks(t.db, HALF);
    const app = 'lh-fault-dbloss';
    const listenApp = `${app}:listen`;
    const f = (fleet = new Fleet(t.url, workerArgs(app, LEASE_MS, ['--listen-apart'])));
    await Promise.all([f.spawn(), f.spawn(), f.spawn()]);
    let terminated = 0;
    let rounds = 0;
    await untilDone(HALF, async () => {
      if (rounds < 4) {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name IN (${app}, ${listenApp})) AS x`.execute(t.db);
        terminated += rows[0]!.n;
        rounds++;
      }
      await sleep(random(150, 400));
    });
    // each worker is LISTENing again on a connection of its own (named apart from its pool's): a
    // notification reaches it, and it answers with a ready-only claim on that connection.
    // Notified again each round, until every worker's LISTEN session has answered. (The pools'
    // sessions send ready-only claims too while busy, so they are told apart by name, not counted.)
    const answered = new Set<number>();
    const since = (await sql<{ at: Date }>`SELECT clock_timestamp() AS at`.execute(t.db)).rows[0]!.at;
    await expect
      .poll(
        async () => {
          await sql`SELECT pg_notify('leasehold:leasehold.task', '')`.execute(t.db);
          const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
              WHERE application_name = ${listenApp} AND query_start >= ${since}
                AND query LIKE '%ready AS (%' AND query NOT LIKE '%doomed AS (%'`.execute(t.db);
          for (const r of rows) answered.add(r.pid);
          return answered.size;
        },
        { timeout: 20_000 },
      )
      .toBe(3);
    const noticed = new Set(f.events.filter((e) => e.e === 'error' || e.e === 'heartbeat-failed').map((e) => e.pid));
    await f.stopAll();
    expectNoCrash(f);
    const tally = await checkFaultOutcome(t.db, f.events);
    report('db-connection-loss', tally, { kills: 0, rounds, 'backends-terminated': terminated });
    expect(rounds).toBeGreaterThan(1);
    expect(noticed.size, 'workers that saw the outage').toBe(3);
  });

  it('stalled and frozen workers past the lease: their late results are refused, each task completes once through the new owner', { timeout: 300_000 }, async () => {
    const lease = 1_500;
    // the first attempt blocks its process's event loop past the lease: no heartbeat can run
    await seedFaultTasks(t.db, SMALL, [{ payload: { stall: lease + 1_000 }, priority: 1, count: 2 }]);
    const f = (fleet = new Fleet(t.url, workerArgs('lh-fault-stall', lease)));
    await Promise.all([f.spawn(), f.spawn(), f.spawn()]);
    let freezes = 0;
    await untilDone(SMALL, async () => {
      await sleep(random(100, 300));
      const victim = f.live[Math.floor(Math.random() * f.live.length)];
      if (victim === undefined || freezes >= 2) return;
      // a VM pause or stop-the-world GC longer than the lease
      await f.freeze(victim, lease * 2);
      freezes++;
    });
    await f.stopAll();
    expectNoCrash(f);
    const tally = await checkFaultOutcome(t.db, f.events);
    report('stalled-and-frozen', tally, { kills: 0, freezes, stalls: 2 });
    // the stalled handlers' leases were taken over, so their owners' results were refused or aborted
    expect(tally.takeovers).toBeGreaterThanOrEqual(2);
    expect(tally.staleRefused + tally.staleAborted).toBeGreaterThanOrEqual(2);
    expect(tally.maxTakeoverLagMs).toBeLessThan(lease + POLL_MS);
  });

  it('slow handlers deaf to their AbortSignal past the time limit: abandoned and retried; the late effect changes nothing in the database', { timeout: 300_000 }, async () => {
    const lease = 1_500;
    // the first attempt sleeps past the handler time limit, ignoring its signal, then writes its effect late
    await seedFaultTasks(t.db, SMALL, [{ payload: { slow: lease }, priority: 1, count: 4 }]);
    const f = (fleet = new Fleet(t.url, workerArgs('lh-fault-slow', lease, ['--handler-timeout', String(lease - 500)])));
    await Promise.all([f.spawn(), f.spawn()]);
    await untilDone(SMALL, () => sleep(100));
    // the abandoned attempts' late effects land after the retries finished: wait for all four
    await expect.poll(async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM fault_effect`.execute(t.db)).rows[0]!.n, { timeout: 10_000 }).toBe(SMALL + 4);
    await f.stopAll();
    expectNoCrash(f);
    const tally = await checkFaultOutcome(t.db, f.events);
    report('slow-handlers', tally, { kills: 0, 'slow-handlers': 4 });
    expect(f.events.filter((e) => e.e === 'retry' && /timed out/.test(e.message ?? ''))).toHaveLength(4);
    expect(tally.duplicates).toBe(4);
  });
});
