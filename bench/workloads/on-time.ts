// Issue 32, "On time: timers, scheduled tasks and limited tasks start when they are due". Each
// workload runs worker child processes (on-time-child.ts) at the library's defaults — createWorker
// with only pool, schema and tasks: concurrency 8, pollInterval 2 s, prefetch and batch sized by
// the worker — on a fresh schema, and reports how late things start against the time they were
// due, or what an idle worker costs, or what a limit does to throughput.
//
// Clocks: a due time is the database's (available_at, or a sleep's wake_at, both written with
// now()); a handler start is the worker process's wall clock (performance.timeOrigin +
// performance.now()) plus that process's measured offset to the database's clock_timestamp()
// (best of 7 round trips; printed). sleep-lateness's start is that of the plain recorded step
// after the sleep, as in the workflow harness's wf-sleep (../shared/bench-workflows).
//
// Only with `--only <name>`, and one round unless BENCH_ONTIME_ROUNDS says more. Sizes: see the
// env variables below and bench/README.md.
import { fileURLToPath } from 'node:url';
import { enqueueMany, type TaskDefinition } from '@leasehold/core';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import { Child } from '../lib/child.js';
import { backendCpu, cpuDelta } from '../lib/server-cpu.js';
import { fmt, percentile } from '../lib/stats.js';
import type { BenchContext, Metric, RoundResult, Workload } from '../lib/workload.js';
import { childOptions, freshSchema, sleep, unfinished } from './common.js';
import type { OnTimeChildOptions } from './on-time-child.js';
import { AFTER_STEP, LIMIT_NAME, ON_TIME, onTimeTasks, SLEEP_STEP, wallNow, type OnTimeKind, type OnTimeSettings } from './on-time-tasks.js';

const SCRIPT = fileURLToPath(new URL('./on-time-child.ts', import.meta.url));

function envInt(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}`);
  return value;
}

// read when a round starts, so a bad value fails that workload alone
const sizes = () => ({
  sleepRuns: envInt('BENCH_SLEEP_RUNS', 200, 1),
  sleepAloneRuns: envInt('BENCH_SLEEP_ALONE_RUNS', 10, 1),
  sleepMs: envInt('BENCH_SLEEP_MS', 1000, 1),
  scheduledTasks: envInt('BENCH_SCHEDULED_TASKS', 1000, 1),
  scheduledLeadMs: envInt('BENCH_SCHEDULED_LEAD_MS', 1000, 0),
  scheduledSpreadMs: envInt('BENCH_SCHEDULED_SPREAD_MS', 1000, 0),
  retryTasks: envInt('BENCH_RETRY_TASKS', 200, 1),
  retryMs: envInt('BENCH_RETRY_MS', 1000, 1),
  idleSeconds: envInt('BENCH_IDLE_SECONDS', 60, 1),
  idleWarmupSeconds: envInt('BENCH_IDLE_WARMUP_SECONDS', 11, 0),
  mixLimited: envInt('BENCH_MIX_LIMITED', 3000, 0),
  mixUnlimited: envInt('BENCH_MIX_UNLIMITED', 2000, 1),
  mixRate: envInt('BENCH_MIX_RATE', 50, 1),
  mixWorkMs: envInt('BENCH_MIX_WORK_MS', 50, 0),
  mixAfterSeconds: envInt('BENCH_MIX_AFTER_SECONDS', 10, 1),
  concTasks: envInt('BENCH_CONC_TASKS', 20_000, 1),
  concBound: envInt('BENCH_CONC_BOUND', 1000, 1),
});

const ROUNDS = envInt('BENCH_ONTIME_ROUNDS', 1, 1);
const WORKERS_NOTE = 'worker processes at the library defaults (createWorker: concurrency 8, pollInterval 2 s, prefetch/batch sized by the worker)';

interface Event {
  readonly i: number;
  readonly t: number;
  readonly kind: string;
  /** Which child sent it. */
  readonly child: number;
}

interface ChildStats {
  readonly clock: { readonly offsetMs: number; readonly rttMs: number };
  readonly failures: number;
  readonly cpuMs: number;
  readonly ms: number;
  readonly statements: Record<string, number>;
}

/** `n` worker children running `kinds`, with their handler starts and ends collected. */
class Workers {
  readonly children: Child[] = [];
  readonly starts: Event[] = [];
  readonly ends: Event[] = [];
  readonly claims: Event[] = [];
  readonly #counts: number[] = [];

  constructor(ctx: BenchContext, n: number, options: Omit<OnTimeChildOptions, 'url' | 'schema'>) {
    for (let k = 0; k < n; k++) {
      this.#counts.push(0);
      const child = new Child('worker', { ...childOptions(ctx), ...options }, SCRIPT)
        .on('start', (m) => void this.starts.push({ i: Number(m.i), t: Number(m.t), kind: String(m.kind), child: k }))
        .on('end', (m) => void this.ends.push({ i: Number(m.i), t: Number(m.t), kind: String(m.kind), child: k }))
        .on('claimed', (m) => void this.claims.push({ i: Number(m.i), t: Number(m.t), kind: String(m.kind), child: k }))
        .on('count', (m) => void (this.#counts[k] = Number(m.n)));
      this.children.push(child);
    }
  }

  async ready(): Promise<void> {
    await Promise.all(this.children.map((c) => c.next('ready')));
  }

  /** Starts every worker; returns the wall-clock ms when 'go' went out. */
  async go(): Promise<number> {
    const t = wallNow();
    for (const c of this.children) c.send({ type: 'go' });
    await Promise.all(this.children.map((c) => c.next('started')));
    return t;
  }

  handled(): number {
    return this.#counts.reduce((a, b) => a + b, 0);
  }

  /** Waits until `done()` holds; false when `deadline` (wall-clock ms) passed first; throws when a child failed. */
  async until(done: () => boolean | Promise<boolean>, deadline: number): Promise<boolean> {
    while (!(await done())) {
      for (const c of this.children) if (c.failure) throw c.failure;
      if (wallNow() > deadline) return false;
      await sleep(5);
    }
    return true;
  }

  async stats(): Promise<ChildStats[]> {
    for (const c of this.children) c.send({ type: 'stats' });
    return Promise.all(this.children.map(async (c) => (await c.next('stats')) as unknown as ChildStats));
  }

  async resetStats(): Promise<void> {
    for (const c of this.children) c.send({ type: 'reset-stats' });
    await Promise.all(this.children.map((c) => c.next('stats-reset')));
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => c.stop()));
  }
}

/** Starts `n` worker children and waits until they are ready (connections open, clock measured). */
async function startWorkers(ctx: BenchContext, n: number, kinds: OnTimeKind[], settings: OnTimeSettings, extra: Partial<OnTimeChildOptions> = {}): Promise<Workers> {
  const w = new Workers(ctx, n, { kinds, settings, reportStarts: true, ...extra });
  try {
    await w.ready();
  } catch (e) {
    await w.stop();
    throw e;
  }
  return w;
}

async function enqueueAll(ctx: BenchContext, task: TaskDefinition<{ i: number }>, items: { payload: { i: number }; runAt?: Date }[]): Promise<void> {
  for (let k = 0; k < items.length; k += 5000) await enqueueMany(ctx.admin, task, items.slice(k, k + 5000), { schema: BENCH_SCHEMA });
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Lateness samples → p50/p95/p99/max, how many, how many early (before due). */
function latenessValues(samples: number[]): Record<string, number> {
  return {
    p50: percentile(samples, 50),
    p95: percentile(samples, 95),
    p99: percentile(samples, 99),
    max: samples.length ? Math.max(...samples) : NaN,
    n: samples.length,
  };
}

function latenessMetrics(what: string): Metric[] {
  return [
    { key: 'p50', label: `${what} p50`, unit: 'ms' },
    { key: 'p95', label: `${what} p95`, unit: 'ms' },
    { key: 'p99', label: `${what} p99`, unit: 'ms' },
    { key: 'max', label: `${what} max`, unit: 'ms' },
    { key: 'n', label: 'started and measured', unit: 'tasks' },
  ];
}

const clockNote = (stats: ChildStats[]) =>
  stats.map((s, k) => `worker ${k}: db − local ${s.clock.offsetMs.toFixed(2)} ms (±${(s.clock.rttMs / 2).toFixed(2)})`).join(', ');

function describeLateness(ctx: BenchContext, name: string, v: Record<string, number>, extra: string): void {
  ctx.log(`  ${name}: lateness p50 ${fmt(v.p50!)} / p95 ${fmt(v.p95!)} / p99 ${fmt(v.p99!)} / max ${fmt(v.max!)} ms over ${v.n} tasks; ${extra}`);
}

/** How many samples are early by more than clock error can explain, as a problem, or ''. */
function earlyProblem(samples: number[], slackMs = 5): string {
  const early = samples.filter((x) => x < -slackMs).length;
  return early ? `${early} started more than ${slackMs} ms before due (min ${fmt(Math.min(...samples))} ms)` : '';
}

// ---------------------------------------------------------------------------------------------
// sleep-lateness: workflows sleep, then run one step

async function sleepRound(ctx: BenchContext, runs: number): Promise<RoundResult> {
  const s = sizes();
  await freshSchema(ctx);
  const tasks = onTimeTasks({ sleepMs: s.sleepMs });
  await enqueueAll(ctx, tasks.sleep, range(runs).map((i) => ({ payload: { i } })));
  await settle(ctx.admin, { analyze: true });
  const w = await startWorkers(ctx, 2, ['sleep'], { sleepMs: s.sleepMs });
  try {
    const tGo = await w.go();
    const all = await w.until(() => w.starts.length >= runs, tGo + s.sleepMs + 60_000);
    await w.until(async () => (await unfinished(ctx.admin)) === 0, wallNow() + 10_000);
    const stats = await w.stats();
    const r = await ctx.admin.query<{ i: number; wake: number; local: number; first: number }>(
      `SELECT (t.payload->>'i')::int AS i,
              extract(epoch FROM s.wake_at)::float8 * 1000 AS wake,
              extract(epoch FROM s.created_at)::float8 * 1000 AS first,
              (a.result->>'local')::float8 AS local
         FROM ${BENCH_SCHEMA}.task_step s
         JOIN ${BENCH_SCHEMA}.task t ON t.id = s.task_id
         JOIN ${BENCH_SCHEMA}.task_step a ON a.task_id = s.task_id AND a.name = $2
        WHERE s.name = $1`,
      [SLEEP_STEP, AFTER_STEP],
    );
    const childOf = new Map(w.starts.map((e) => [e.i, e.child]));
    // the step's start by the worker's clock, corrected by its measured offset to the database's
    const samples = r.rows.flatMap((row) => {
      const k = childOf.get(row.i);
      return k === undefined ? [] : [row.local + stats[k]!.clock.offsetMs - row.wake];
    });
    const v = latenessValues(samples);
    const firsts = r.rows.map((row) => row.first);
    const problems = [
      all ? '' : `${runs - w.starts.length} of ${runs} runs did not reach the step after the sleep within ${s.sleepMs / 1000 + 60} s`,
      r.rows.length !== runs ? `${r.rows.length} of ${runs} runs recorded the sleep and the step` : '',
      stats.some((x) => x.failures) ? `${stats.reduce((a, x) => a + x.failures, 0)} runs dead` : '',
      earlyProblem(samples),
    ].filter(Boolean);
    describeLateness(
      ctx,
      `sleep ${s.sleepMs} ms × ${runs}`,
      v,
      `the step's start by the worker's clock (corrected by its offset to the database's) against the sleep's wake_at; ` +
        `sleeps began over ${fmt(firsts.length ? Math.max(...firsts) - Math.min(...firsts) : NaN)} ms; ${clockNote(stats)}`,
    );
    return {
      values: v,
      check: problems.length ? problems.join('; ') : 'ok',
      details: { clocks: stats.map((x) => x.clock) },
    };
  } finally {
    await w.stop();
  }
}

const sleepDescription = (runs: number, env: string) =>
  `${runs} workflow runs (\`${env}\`) of \`ctx.sleep('${SLEEP_STEP}', ${sizes().sleepMs} ms)\` (\`BENCH_SLEEP_MS\`) then one \`ctx.step\` noting its start, on 2 ${WORKERS_NOTE}; ` +
  `lateness = the step's clock_timestamp() − the sleep's wake_at (task_step), both the database's clock`;

export const sleepLateness: Workload = {
  name: 'sleep-lateness',
  description: () => sleepDescription(sizes().sleepRuns, 'BENCH_SLEEP_RUNS'),
  metrics: latenessMetrics('step after the sleep − wake time'),
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  round: (ctx) => sleepRound(ctx, sizes().sleepRuns),
};

export const sleepLatenessAlone: Workload = {
  name: 'sleep-lateness-alone',
  description: () => sleepDescription(sizes().sleepAloneRuns, 'BENCH_SLEEP_ALONE_RUNS'),
  metrics: latenessMetrics('step after the sleep − wake time (few runs)'),
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  round: (ctx) => sleepRound(ctx, sizes().sleepAloneRuns),
};

// ---------------------------------------------------------------------------------------------
// scheduled-lateness: plain tasks with a start time, spread over a second

/** Per task i, its available_at (ms since the epoch, the database's clock). */
async function availableAt(ctx: BenchContext, name: string): Promise<Map<number, { at: number; attempts: number }>> {
  const r = await ctx.admin.query<{ i: number; at: number; attempts: number }>(
    `SELECT (payload->>'i')::int AS i, extract(epoch FROM available_at)::float8 * 1000 AS at, attempts FROM ${BENCH_SCHEMA}.task WHERE name = $1`,
    [name],
  );
  return new Map(r.rows.map((row) => [row.i, { at: row.at, attempts: row.attempts }]));
}

/** Lateness of each start against its task's available_at, from the worker's clock plus its offset. */
function startLateness(starts: readonly Event[], due: Map<number, { at: number }>, stats: ChildStats[]): number[] {
  return starts.flatMap((e) => {
    const d = due.get(e.i);
    return d ? [e.t + stats[e.child]!.clock.offsetMs - d.at] : [];
  });
}

export const scheduledLateness: Workload = {
  name: 'scheduled-lateness',
  description: () =>
    `${sizes().scheduledTasks} plain tasks (\`BENCH_SCHEDULED_TASKS\`) enqueued in one enqueueMany into idle workers with \`runAt\` spread evenly over ${sizes().scheduledSpreadMs} ms (\`BENCH_SCHEDULED_SPREAD_MS\`) starting ${sizes().scheduledLeadMs} ms ahead ` +
    `(\`BENCH_SCHEDULED_LEAD_MS\`), on 2 ${WORKERS_NOTE}; lateness = handler start (worker clock + its offset to the database's) − available_at`,
  metrics: latenessMetrics('handler start − runAt'),
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  async round(ctx): Promise<RoundResult> {
    const s = sizes();
    const n = s.scheduledTasks;
    await freshSchema(ctx);
    const tasks = onTimeTasks({});
    const w = await startWorkers(ctx, 2, ['at'], {});
    try {
      await w.go();
      await sleep(500); // idle, waiting on LISTEN
      const base = Date.now() + s.scheduledLeadMs;
      const items = range(n).map((i) => ({ payload: { i }, runAt: new Date(base + Math.floor((i * s.scheduledSpreadMs) / n)) }));
      const t0 = Date.now();
      await enqueueAll(ctx, tasks.at, items);
      const enqueueMs = Date.now() - t0;
      const all = await w.until(() => w.starts.length >= n, base + s.scheduledSpreadMs + 60_000);
      const stats = await w.stats();
      const due = await availableAt(ctx, ON_TIME.at);
      const samples = startLateness(w.starts, due, stats);
      const v = latenessValues(samples);
      const problems = [all ? '' : `${n - w.starts.length} of ${n} tasks not started within 60 s of the last runAt`, earlyProblem(samples)].filter(Boolean);
      describeLateness(ctx, `${n} scheduled tasks`, v, `enqueue took ${enqueueMs} ms (lead ${s.scheduledLeadMs} ms); worker clock + offset; ${clockNote(stats)}`);
      return { values: v, check: problems.length ? problems.join('; ') : 'ok', details: { enqueueMs, clocks: stats.map((x) => x.clock) } };
    } finally {
      await w.stop();
    }
  },
};

// ---------------------------------------------------------------------------------------------
// retry-lateness: each task fails once with a fixed delay, then succeeds

export const retryLateness: Workload = {
  name: 'retry-lateness',
  description: () =>
    `${sizes().retryTasks} preloaded tasks (\`BENCH_RETRY_TASKS\`) whose first attempt throws \`RetryableError\` with \`retryAfterMs\` ${sizes().retryMs} ms (\`BENCH_RETRY_MS\`; backoff bounded to 1 ms, so the delay is exactly that), ` +
    `then succeed, on 2 ${WORKERS_NOTE}; lateness = second attempt's handler start (worker clock + offset) − its available_at`,
  metrics: latenessMetrics('second attempt start − available_at'),
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  async round(ctx): Promise<RoundResult> {
    const s = sizes();
    const n = s.retryTasks;
    await freshSchema(ctx);
    const tasks = onTimeTasks({ retryMs: s.retryMs });
    await enqueueAll(ctx, tasks.retry, range(n).map((i) => ({ payload: { i } })));
    await settle(ctx.admin, { analyze: true });
    const w = await startWorkers(ctx, 2, ['retry'], { retryMs: s.retryMs });
    try {
      const tGo = await w.go();
      const all = await w.until(() => w.starts.length >= n, tGo + s.retryMs + 60_000);
      await w.until(async () => (await unfinished(ctx.admin)) === 0, wallNow() + 10_000);
      const stats = await w.stats();
      const due = await availableAt(ctx, ON_TIME.retry);
      const samples = startLateness(w.starts, due, stats);
      const v = latenessValues(samples);
      const wrongAttempts = [...due.values()].filter((d) => d.attempts !== 2).length;
      const problems = [
        all ? '' : `${n - w.starts.length} of ${n} second attempts not started within 60 s`,
        wrongAttempts ? `${wrongAttempts} tasks did not take exactly 2 attempts` : '',
        earlyProblem(samples),
      ].filter(Boolean);
      describeLateness(ctx, `${n} retries after ${s.retryMs} ms`, v, `worker clock + offset; ${clockNote(stats)}`);
      return { values: v, check: problems.length ? problems.join('; ') : 'ok', details: { clocks: stats.map((x) => x.clock) } };
    } finally {
      await w.stop();
    }
  },
};

// ---------------------------------------------------------------------------------------------
// idle-cost: one worker with nothing to do

async function xacts(ctx: BenchContext): Promise<number> {
  const r = await ctx.admin.query<{ n: string }>(`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`);
  return Number(r.rows[0]!.n);
}

export const idleCost: Workload = {
  name: 'idle-cost',
  description: () =>
    `1 idle worker process at the library defaults, nothing enqueued, for ${sizes().idleSeconds} s (\`BENCH_IDLE_SECONDS\`) after ${sizes().idleWarmupSeconds} s of start-up (\`BENCH_IDLE_WARMUP_SECONDS\`): every statement it sends on any connection ` +
    `(its pool's and its LISTEN connection, counted at the client), its process CPU, its backends' CPU, per minute`,
  metrics: [
    { key: 'statements', label: 'statements sent', unit: 'per min' },
    { key: 'cpu', label: 'worker process CPU', unit: 'ms per min' },
    { key: 'serverCpu', label: 'its PostgreSQL backends CPU', unit: 'ms per min' },
    { key: 'xacts', label: 'server-counted transactions in the bench database (pg_stat_database, approximate)', unit: 'per min' },
  ],
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  async round(ctx): Promise<RoundResult> {
    const s = sizes();
    await freshSchema(ctx);
    const w = await startWorkers(ctx, 1, ['plain'], {}, { countStatements: true, reportStarts: false });
    try {
      await w.go();
      // start-up (migration check, presence, the first claims), and PostgreSQL 15's statistics: a
      // backend's counters reach pg_stat_database up to 10 s late, so the set-up's must be in first
      await sleep(s.idleWarmupSeconds * 1000);
      await w.resetStats();
      const server0 = await backendCpu(ctx.admin);
      const x0 = await xacts(ctx);
      await sleep(s.idleSeconds * 1000);
      const [st] = await w.stats();
      const server1 = await backendCpu(ctx.admin);
      // give the backends' statistics a moment to be flushed
      await sleep(1500);
      const x1 = await xacts(ctx);
      const perMin = 60_000 / st!.ms;
      const total = Object.values(st!.statements).reduce((a, b) => a + b, 0);
      const byKind = Object.entries(st!.statements)
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${n} × ${k}`)
        .join('; ');
      ctx.log(`  idle ${fmt(st!.ms / 1000)} s: ${total} statements (${fmt(total * perMin)}/min): ${byKind || 'none'}; CPU ${fmt(st!.cpuMs)} ms`);
      return {
        values: {
          statements: total * perMin,
          cpu: st!.cpuMs * perMin,
          serverCpu: server0.size ? cpuDelta(server0, server1) * perMin : NaN,
          // the two pg_stat_database reads are the admin's own transactions
          xacts: (x1 - x0 - 1) * perMin,
        },
        check: 'ok',
        details: { statements: st!.statements, seconds: st!.ms / 1000 },
      };
    } finally {
      await w.stop();
    }
  },
};

// ---------------------------------------------------------------------------------------------
// limits-mix: rate-limited tasks beside unlimited work of the same priority

interface MixPhase {
  readonly finishMs: number;
  readonly limitedDuring: number;
  readonly rateDuring: number;
  readonly gapDuring: number;
  readonly limitedAfter: number;
  readonly rateAfter: number;
  readonly maxPerSecond: number;
  /** The same by the claims' now() (the database's clock, from each task's lease). */
  readonly maxPerSecondClaimed: number;
  /** The same by the limit's own stamps (task_limit.start_at), and how many stamps were seen. */
  readonly maxPerSecondStamped: number;
  readonly stamps: number;
  readonly firstLimitedMs: number;
  readonly complete: boolean;
  /** Limited starts in each whole second from "go". */
  readonly perSecond: number[];
}

/**
 * Collects the limit's own start stamps (task_limit.start_at, epoch ms by the database's clock,
 * taken after the claim's lock) by reading them every 200 ms: each stays listed for the rate's
 * period (1 s), so every start is seen; one claim's starts share a stamp, so a stamp counts as
 * often as the most times one reading listed it.
 */
function sampleLimitStarts(ctx: BenchContext, limit: string): { stop: () => Promise<number[]> } {
  const seen = new Map<number, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const r = await ctx.admin.query<{ start_at: number[] }>(`SELECT start_at FROM ${BENCH_SCHEMA}.task_limit WHERE name = $1`, [limit]);
      const counts = new Map<number, number>();
      for (const t of r.rows[0]?.start_at ?? []) counts.set(Number(t), (counts.get(Number(t)) ?? 0) + 1);
      for (const [t, n] of counts) seen.set(t, Math.max(n, seen.get(t) ?? 0));
      await sleep(200);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return [...seen].flatMap(([t, n]) => Array.from({ length: n }, () => t)).sort((a, b) => a - b);
    },
  };
}

/** Most of `times` (sorted) inside any window of `windowMs`. */
function mostInWindow(times: readonly number[], windowMs: number): number {
  let best = 0;
  for (let a = 0, b = 0; b < times.length; b++) {
    while (times[b]! - times[a]! >= windowMs) a++;
    best = Math.max(best, b - a + 1);
  }
  return best;
}

async function mixPhase(ctx: BenchContext, limited: number): Promise<MixPhase> {
  const s = sizes();
  const free = s.mixUnlimited;
  await freshSchema(ctx);
  const settings = { rate: s.mixRate, workMs: s.mixWorkMs };
  const tasks = onTimeTasks(settings);
  // interleaved in 20 slices, so neither kind has all the lower ids
  for (let k = 0; k < 20; k++) {
    const f0 = Math.floor((k * free) / 20);
    const l0 = Math.floor((k * limited) / 20);
    await enqueueAll(ctx, tasks.free, range(Math.floor(((k + 1) * free) / 20) - f0).map((j) => ({ payload: { i: f0 + j } })));
    if (limited) await enqueueAll(ctx, tasks.limited, range(Math.floor(((k + 1) * limited) / 20) - l0).map((j) => ({ payload: { i: l0 + j } })));
  }
  await settle(ctx.admin, { analyze: true });
  const w = await startWorkers(ctx, 3, ['limited', 'free'], settings);
  try {
    const tGo = await w.go();
    const sampler = sampleLimitStarts(ctx, LIMIT_NAME);
    const freeDone = await w.until(() => w.ends.length >= free, tGo + 120_000);
    const finish = Math.max(...w.ends.map((e) => e.t));
    const limitedStarts = () => w.starts.filter((e) => e.kind === 'L').length;
    const complete = !limited || (await w.until(() => limitedStarts() >= limited, finish + s.mixAfterSeconds * 1000));
    const tEnd = complete ? Math.max(finish, ...w.starts.filter((e) => e.kind === 'L').map((e) => e.t)) : wallNow();
    // the last starts stay listed for a period: one more reading after them
    await sleep(300);
    const stamps = await sampler.stop();
    const stats = await w.stats();
    if (!freeDone) throw new Error(`${free - w.ends.length} of ${free} unlimited tasks not finished within 120 s`);
    const failures = stats.reduce((a, x) => a + x.failures, 0);
    if (failures) throw new Error(`${failures} tasks dead`);
    // starts up to the end of the measurement (the workers went on while it was read)
    const times = w.starts.filter((e) => e.kind === 'L' && e.t <= tEnd).map((e) => e.t).sort((a, b) => a - b);
    const during = times.filter((t) => t <= finish);
    const after = times.filter((t) => t > finish);
    const marks = [tGo, ...during, finish];
    let gap = 0;
    for (let k = 1; k < marks.length; k++) gap = Math.max(gap, marks[k]! - marks[k - 1]!);
    const afterSeconds = (tEnd - finish) / 1000;
    return {
      finishMs: finish - tGo,
      limitedDuring: during.length,
      rateDuring: during.length / ((finish - tGo) / 1000),
      gapDuring: limited ? gap : NaN,
      limitedAfter: after.length,
      // only meaningful when the window after is long enough to count in
      rateAfter: afterSeconds >= 1 ? after.length / afterSeconds : NaN,
      maxPerSecond: mostInWindow(times, 1000),
      maxPerSecondClaimed: mostInWindow(w.claims.map((e) => e.t).sort((a, b) => a - b), 1000),
      maxPerSecondStamped: mostInWindow(stamps, 1000),
      stamps: stamps.length,
      firstLimitedMs: times.length ? times[0]! - tGo : NaN,
      complete,
      perSecond: range(Math.ceil((tEnd - tGo) / 1000)).map((k) => times.filter((t) => t >= tGo + k * 1000 && t < tGo + (k + 1) * 1000).length),
    };
  } finally {
    await w.stop();
  }
}

export const limitsMix: Workload = {
  name: 'limits-mix',
  description: () =>
    `${sizes().mixLimited} no-op tasks under a limit of rate ${sizes().mixRate}/s (\`BENCH_MIX_LIMITED\`, \`BENCH_MIX_RATE\`) preloaded with ${sizes().mixUnlimited} unlimited tasks of the same priority whose handler sleeps ${sizes().mixWorkMs} ms ` +
    `(\`BENCH_MIX_UNLIMITED\`, \`BENCH_MIX_WORK_MS\`), interleaved, on 3 ${WORKERS_NOTE}; measured until the unlimited work is done plus ${sizes().mixAfterSeconds} s (\`BENCH_MIX_AFTER_SECONDS\`); ` +
    `then the unlimited tasks alone (baseline). Times from "go", handler starts on the workers' clocks`,
  metrics: [
    { key: 'rateDuring', label: 'limited starts/s while the unlimited work runs', unit: '/s' },
    { key: 'gapDuring', label: 'longest time with no limited start while it runs', unit: 'ms' },
    { key: 'rateAfter', label: 'limited starts/s after it', unit: '/s' },
    { key: 'maxPerSecond', label: 'most limited handler starts in any 1 s', unit: 'starts' },
    { key: 'maxPerSecondClaimed', label: "most limited claims in any 1 s, by the claim's now()", unit: 'claims' },
    { key: 'maxPerSecondStamped', label: "most limited starts in any 1 s, by the limit's stamps (task_limit.start_at)", unit: 'starts' },
    { key: 'finish', label: 'unlimited work finished, with the limited tasks', unit: 's' },
    { key: 'finishBaseline', label: 'unlimited work finished, alone (baseline)', unit: 's' },
  ],
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  async round(ctx): Promise<RoundResult> {
    const s = sizes();
    const mix = await mixPhase(ctx, s.mixLimited);
    ctx.log(
      `  with ${s.mixLimited} limited: unlimited done at ${fmt(mix.finishMs)} ms; limited started ${mix.limitedDuring} while it ran (${fmt(mix.rateDuring)}/s, first at ${fmt(mix.firstLimitedMs)} ms, ` +
        `longest gap ${fmt(mix.gapDuring)} ms), ${mix.limitedAfter} after (${fmt(mix.rateAfter)}/s); most in any 1 s: ${mix.maxPerSecond} by handler start, ${mix.maxPerSecondClaimed} by the claims' now(), ` +
        `${mix.maxPerSecondStamped} by the limit's own stamps (${mix.stamps} seen); ` +
        `per second from go: ${mix.perSecond.join(' ')}`,
    );
    const base = await mixPhase(ctx, 0);
    ctx.log(`  baseline: unlimited done at ${fmt(base.finishMs)} ms`);
    return {
      values: {
        rateDuring: mix.rateDuring,
        gapDuring: mix.gapDuring,
        rateAfter: mix.rateAfter,
        maxPerSecond: mix.maxPerSecond,
        maxPerSecondClaimed: mix.maxPerSecondClaimed,
        maxPerSecondStamped: mix.maxPerSecondStamped,
        finish: mix.finishMs / 1000,
        finishBaseline: base.finishMs / 1000,
      },
      check: 'ok',
      details: { mix, base },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// limit-concurrency: a concurrency-only limit that never binds, against no limit

async function concPhase(
  ctx: BenchContext,
  limited: boolean,
): Promise<{ rate: number; seconds: number; workerCpu: number; serverCpu: number; statements: number; claims: number }> {
  const s = sizes();
  const n = s.concTasks;
  await freshSchema(ctx);
  const settings = { concurrency: s.concBound };
  const tasks = onTimeTasks(settings);
  await enqueueAll(ctx, limited ? tasks.conc : tasks.plain, range(n).map((i) => ({ payload: { i } })));
  await settle(ctx.admin, { analyze: true });
  // statements counted too: a figure that moves with what a change sends, where tasks/s moves
  // ±20 % from run to run on this machine (bench/RESULTS.md, issue 32, third session)
  const w = await startWorkers(ctx, 2, [limited ? 'conc' : 'plain'], settings, { reportStarts: false, reportCounts: true, countStatements: true });
  try {
    await w.resetStats();
    const serverBefore = await backendCpu(ctx.admin);
    const t0 = await w.go();
    const done = (await w.until(() => w.handled() >= n, t0 + 120_000)) && (await w.until(async () => (await unfinished(ctx.admin)) === 0, t0 + 130_000));
    if (!done) throw new Error(`${limited ? 'limited' : 'unlimited'}: ${w.handled()} of ${n} handled within 120 s`);
    const seconds = (wallNow() - t0) / 1000;
    // CPU per 1,000 tasks: both phases keep both cores busy, so this is what a change must lower
    const serverMs = cpuDelta(serverBefore, await backendCpu(ctx.admin));
    let workerMs = 0;
    let statements = 0;
    let claims = 0;
    for (const st of await w.stats()) {
      workerMs += st.cpuMs;
      for (const [kind, count] of Object.entries(st.statements)) {
        statements += count;
        if (kind === 'claim') claims += count;
      }
    }
    return {
      rate: n / seconds,
      seconds,
      workerCpu: (workerMs / n) * 1000,
      serverCpu: serverBefore.size ? (serverMs / n) * 1000 : NaN,
      statements: (statements / n) * 1000,
      claims: (claims / n) * 1000,
    };
  } finally {
    await w.stop();
  }
}

export const limitConcurrency: Workload = {
  name: 'limit-concurrency',
  description: () =>
    `${sizes().concTasks} preloaded no-op tasks (\`BENCH_CONC_TASKS\`), with no limit, then under one concurrency-only limit of ${sizes().concBound} (\`BENCH_CONC_BOUND\`, never binding), ` +
    `each on 2 ${WORKERS_NOTE}; from "go" until none pending or processing`,
  metrics: [
    { key: 'unlimited', label: 'unlimited', unit: 'tasks/s' },
    { key: 'limited', label: 'under the concurrency limit', unit: 'tasks/s' },
    { key: 'ratio', label: 'limited / unlimited', unit: '×' },
    { key: 'freeWorkerCpu', label: 'unlimited: worker CPU per 1,000', unit: 'ms' },
    { key: 'freeServerCpu', label: 'unlimited: PostgreSQL backends’ CPU per 1,000', unit: 'ms' },
    { key: 'limWorkerCpu', label: 'limited: worker CPU per 1,000', unit: 'ms' },
    { key: 'limServerCpu', label: 'limited: PostgreSQL backends’ CPU per 1,000', unit: 'ms' },
    { key: 'freeStatements', label: 'unlimited: statements sent per 1,000 tasks', unit: 'statements' },
    { key: 'limStatements', label: 'limited: statements sent per 1,000 tasks', unit: 'statements' },
  ],
  onlyWhenNamed: true,
  maxRounds: ROUNDS,
  async round(ctx): Promise<RoundResult> {
    const free = await concPhase(ctx, false);
    const lim = await concPhase(ctx, true);
    ctx.log(
      `  unlimited ${fmt(free.rate)} tasks/s (${fmt(free.seconds)} s), ${fmt(free.statements)} statements per 1,000 tasks of which ${fmt(free.claims)} claims; ` +
        `limited ${fmt(lim.rate)} tasks/s (${fmt(lim.seconds)} s), ${fmt(lim.statements)} statements per 1,000 of which ${fmt(lim.claims)} claims`,
    );
    return {
      values: {
        unlimited: free.rate,
        limited: lim.rate,
        ratio: lim.rate / free.rate,
        freeWorkerCpu: free.workerCpu,
        freeServerCpu: free.serverCpu,
        limWorkerCpu: lim.workerCpu,
        limServerCpu: lim.serverCpu,
        freeStatements: free.statements,
        limStatements: lim.statements,
      },
      check: 'ok',
      details: { free, lim },
    };
  },
};

export const ON_TIME_WORKLOADS: readonly Workload[] = [sleepLateness, sleepLatenessAlone, scheduledLateness, retryLateness, idleCost, limitsMix, limitConcurrency];
