// Issue 36 item 5, "failure by MVCC": a long transaction elsewhere pins the MVCC horizon, vacuum
// can remove no dead row version, and every claim walks the dead index entries the queue's own
// updates leave behind. A steady open-loop producer (BENCH_PINNED_RATE tasks/s, one enqueue each
// in its own transaction) feeds one worker process at the library's defaults (concurrency 8,
// like `latency`); after a warm-up and a minute "before", another session holds a REPEATABLE READ
// snapshot open for BENCH_PINNED_SECONDS, then lets go. Per minute: latency (enqueue resolved →
// handler start, process.hrtime across processes), the most tasks committed but not started at
// any whole second, and what the claims cost the server (deltas of pg_stat_user_indexes /
// pg_statio_user_indexes / pg_statio_user_tables on the task table), per scan of the claim index.
//
// With BENCH_PEERS_DIR naming a copy of the peer harness with its node_modules, graphile-worker
// then runs the same (its peer driver's settings, concurrency 8), on its own fresh schema. Long
// (about 8 minutes per system at the defaults): it runs only when `--only` names it, one round.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import { Child } from '../lib/child.js';
import { fmt, percentile } from '../lib/stats.js';
import type { BenchContext, Metric, RoundResult, Workload } from '../lib/workload.js';
import { freshSchema, sleep } from './common.js';
import type { PinnedChildOptions, PinnedSystem } from './pinned-horizon-child.js';

const SCRIPT = fileURLToPath(new URL('./pinned-horizon-child.ts', import.meta.url));
const now = () => process.hrtime.bigint();
const NS_PER_S = 1_000_000_000n;

interface Settings {
  readonly rate: number;
  readonly warmupS: number;
  readonly beforeS: number;
  readonly pinnedS: number;
  readonly afterS: number;
  /**
   * Seconds between the workload's own `VACUUM (ANALYZE)` of the job table, standing in for
   * autovacuum when the server has it off (CI's server does); 0: none. Default 60 with
   * autovacuum off (its naptime: each database is visited once a minute, and at 400 tasks/s the
   * table is over its thresholds at every visit), 0 with it on.
   */
  readonly vacuumS: number | 'auto';
  /** The peer harness copy for graphile-worker; undefined: leasehold alone. */
  readonly peersDir: string | undefined;
  /** BENCH_PINNED_SYSTEMS: run only these (default: leasehold, and graphile-worker with peersDir). */
  readonly only: readonly string[];
}

function envSeconds(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}`);
  return value;
}

function settings(): Settings {
  return {
    rate: envSeconds('BENCH_PINNED_RATE', 400, 1),
    warmupS: envSeconds('BENCH_PINNED_WARMUP_SECONDS', 30),
    beforeS: envSeconds('BENCH_PINNED_BEFORE_SECONDS', 60, 1),
    pinnedS: envSeconds('BENCH_PINNED_SECONDS', 360, 1),
    afterS: envSeconds('BENCH_PINNED_AFTER_SECONDS', 0),
    vacuumS: process.env.BENCH_PINNED_VACUUM_SECONDS ? envSeconds('BENCH_PINNED_VACUUM_SECONDS', 0) : 'auto',
    peersDir: process.env.BENCH_PEERS_DIR || undefined,
    only: (process.env.BENCH_PINNED_SYSTEMS ?? '').split(',').map((x) => x.trim()).filter(Boolean),
  };
}

/** Where each system keeps its jobs, and which of their indexes a claim walks. */
const TABLES: Record<PinnedSystem, { schema: string; table: string; claimScan: RegExp; claimSet: RegExp; seqScanClaims: boolean }> = {
  // task_claim's scans count the claims; the claim's sources are task_claim, task_due, task_leased
  // (and task_waiting, parked rows coming due)
  leasehold: { schema: BENCH_SCHEMA, table: 'task', claimScan: /^task_claim/, claimSet: /^task_(claim|leased|due|waiting)/, seqScanClaims: false },
  // get_jobs reads jobs_no_queue_index (jobs without a queue) or jobs_main_index, or, when the
  // planner finds the table small, scans it whole: its sequential scans count as claims too
  // (nothing else of graphile-worker's scans the table)
  'graphile-worker': {
    schema: 'graphile_worker',
    table: '_private_jobs',
    claimScan: /^jobs_(main|no_queue)_index$/,
    claimSet: /^jobs_(main|no_queue)_index$/,
    seqScanClaims: true,
  },
};

const SHORT: Record<PinnedSystem, string> = { leasehold: 'leasehold', 'graphile-worker': 'graphile-worker' };
const PREFIX: Record<PinnedSystem, string> = { leasehold: '', 'graphile-worker': 'gw_' };

function systems(s: Pick<Settings, 'peersDir' | 'only'>): PinnedSystem[] {
  const all: PinnedSystem[] = s.peersDir ? ['leasehold', 'graphile-worker'] : ['leasehold'];
  return s.only.length ? all.filter((x) => s.only.includes(x)) : all;
}

function systemMetrics(system: PinnedSystem): Metric[] {
  const p = PREFIX[system];
  const name = SHORT[system];
  return [
    // below the target rate when the producer cannot keep it (graphile-worker's add_job costs about
    // 1 ms of server CPU: on a busy 2-core machine it falls short of 400/s); compare the p99s then
    // knowing the systems did not carry the same load
    { key: `${p}rate_min`, label: `${name}: tasks/s in the slowest minute (warm-up aside)`, unit: 'tasks/s' },
    { key: `${p}p99_before`, label: `${name}: p99 before the pin`, unit: 'ms' },
    { key: `${p}p99_last`, label: `${name}: p99 in the last pinned minute`, unit: 'ms' },
    { key: `${p}p99_ratio`, label: `${name}: p99 last pinned minute / before`, unit: '×', ...(system === 'leasehold' ? { target: { op: '<=', value: 2 } as const } : {}) },
    { key: `${p}backlog`, label: `${name}: most tasks waiting while pinned (1 s samples)`, unit: 'tasks' },
    { key: `${p}buf_before`, label: `${name}: claim-index buffers per claim, before`, unit: 'buffers' },
    { key: `${p}buf_last`, label: `${name}: claim-index buffers per claim, last pinned minute`, unit: 'buffers' },
    { key: `${p}task_buf_before`, label: `${name}: buffers per task (every index of the table and its heap), before`, unit: 'buffers' },
    { key: `${p}task_buf_last`, label: `${name}: buffers per task, last pinned minute`, unit: 'buffers' },
  ];
}

// The systems are known when the module loads (BENCH_PEERS_DIR, BENCH_PINNED_SYSTEMS), so the
// table shows only theirs.
const METRICS: Metric[] = (() => {
  const run = systems({ peersDir: process.env.BENCH_PEERS_DIR || undefined, only: (process.env.BENCH_PINNED_SYSTEMS ?? '').split(',').map((x) => x.trim()).filter(Boolean) });
  const both = run.length === 2;
  return [
    ...run.flatMap(systemMetrics),
    ...(both ? [{ key: 'vs_gw', label: 'p99 in the last pinned minute, leasehold / graphile-worker', unit: '×', target: { op: '<=', value: 1 } } as const] : []),
  ];
})();

// ---------------------------------------------------------------------------- child process --

/** A child running pinned-horizon-child.ts, forked with the flags of every bench child. */
const pinnedChild = (role: string, options: PinnedChildOptions) => new Child(role, options, SCRIPT);

// ----------------------------------------------------------------------------- server stats --

interface Snapshot {
  readonly t: bigint;
  /** Per index: scans, index entries read, buffers (hit + read). */
  readonly indexes: Map<string, { scan: number; tupRead: number; blks: number }>;
  /** Heap buffers of the table (hit + read). */
  readonly heapBlks: number;
  /** Sequential scans of the table. */
  readonly seqScan: number;
  readonly deadTup: number;
  /** Transactions since the pinning session's xmin, while it holds one. */
  readonly horizonAge: number | null;
}

async function snapshot(admin: pg.Pool, system: PinnedSystem, pinPid: number | null): Promise<Snapshot> {
  const { schema, table } = TABLES[system];
  const t = now();
  const [indexes, heap, pin] = await Promise.all([
    admin.query<{ name: string; scan: string; tup_read: string; blks: string }>(
      `SELECT i.indexrelname AS name, i.idx_scan AS scan, i.idx_tup_read AS tup_read, io.idx_blks_hit + io.idx_blks_read AS blks
       FROM pg_stat_user_indexes i JOIN pg_statio_user_indexes io USING (indexrelid)
       WHERE i.schemaname = $1 AND i.relname = $2`,
      [schema, table],
    ),
    admin.query<{ blks: string; seq: string; dead: string }>(
      `SELECT coalesce(s.heap_blks_hit, 0) + coalesce(s.heap_blks_read, 0) AS blks, t.seq_scan AS seq, t.n_dead_tup AS dead
       FROM pg_stat_user_tables t JOIN pg_statio_user_tables s USING (relid)
       WHERE t.schemaname = $1 AND t.relname = $2`,
      [schema, table],
    ),
    pinPid === null
      ? Promise.resolve(null)
      : admin.query<{ age: number | null }>('SELECT age(backend_xmin) AS age FROM pg_stat_activity WHERE pid = $1', [pinPid]),
  ]);
  return {
    t,
    indexes: new Map(indexes.rows.map((r) => [r.name, { scan: Number(r.scan), tupRead: Number(r.tup_read), blks: Number(r.blks) }])),
    heapBlks: Number(heap.rows[0]?.blks ?? NaN),
    seqScan: Number(heap.rows[0]?.seq ?? NaN),
    deadTup: Number(heap.rows[0]?.dead ?? NaN),
    horizonAge: pin?.rows[0]?.age ?? null,
  };
}

interface Cost {
  claims: number;
  seqScans: number;
  tupRead: number;
  setBlks: number;
  allBlks: number;
  heapBlks: number;
}

/** What the claims cost between two snapshots. */
function claimCost(system: PinnedSystem, a: Snapshot, b: Snapshot): Cost {
  const { claimScan, claimSet, seqScanClaims } = TABLES[system];
  const seqScans = b.seqScan - a.seqScan;
  const cost: Cost = { claims: seqScanClaims ? seqScans : 0, seqScans, tupRead: 0, setBlks: 0, allBlks: 0, heapBlks: b.heapBlks - a.heapBlks };
  for (const [name, end] of b.indexes) {
    const start = a.indexes.get(name) ?? { scan: 0, tupRead: 0, blks: 0 };
    if (claimScan.test(name)) {
      cost.claims += end.scan - start.scan;
      cost.tupRead += end.tupRead - start.tupRead;
    }
    if (claimSet.test(name)) cost.setBlks += end.blks - start.blks;
    cost.allBlks += end.blks - start.blks;
  }
  return cost;
}

function minus(a: Cost, b: Cost): Cost {
  return {
    claims: a.claims - b.claims,
    seqScans: a.seqScans - b.seqScans,
    tupRead: a.tupRead - b.tupRead,
    setBlks: a.setBlks - b.setBlks,
    allBlks: a.allBlks - b.allBlks,
    heapBlks: a.heapBlks - b.heapBlks,
  };
}

/** Per index over the whole run (warm-up to the pin's end): scans and buffers. */
function indexTotals(a: Snapshot, b: Snapshot): string {
  return [...b.indexes]
    .map(([name, end]) => {
      const start = a.indexes.get(name) ?? { scan: 0, tupRead: 0, blks: 0 };
      return `${name} ${end.scan - start.scan} scans / ${end.blks - start.blks} buffers`;
    })
    .join(', ');
}

// ------------------------------------------------------------------------------ the horizon --

/** A session holding a snapshot open: the database's horizon stays at its xmin until release(). */
async function pinHorizon(ctx: BenchContext): Promise<{ pid: number; xmin: string; release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: ctx.url, application_name: 'leasehold-bench-pin' });
  client.on('error', (e) => ctx.log(`pinned-horizon: pinning session: ${e.message}`));
  await client.connect();
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query('SELECT count(*) FROM pg_class');
  const r = await ctx.admin.query<{ xmin: string | null }>('SELECT backend_xmin::text AS xmin FROM pg_stat_activity WHERE pid = $1', [pid]);
  const xmin = r.rows[0]?.xmin;
  if (!xmin) {
    await client.end();
    throw new Error('the pinning session holds no xmin');
  }
  let released = false;
  return {
    pid,
    xmin,
    release: async () => {
      if (released) return;
      released = true;
      await client.query('ROLLBACK').catch(() => {});
      await client.end().catch(() => {});
    },
  };
}

// -------------------------------------------------------------------------------- one system --

interface Bucket {
  readonly label: string;
  readonly phase: 'warm-up' | 'before' | 'pinned' | 'after';
  readonly start: bigint;
  readonly end: bigint;
}

/** One row of the per-minute table. */
interface Row {
  readonly label: string;
  readonly phase: Bucket['phase'];
  readonly tasks: number;
  readonly rate: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly notStarted: number;
  readonly backlog: number;
  readonly claims: number;
  readonly seqScans: number;
  readonly tupPerClaim: number;
  readonly setBufPerClaim: number;
  readonly heapBufPerClaim: number;
  /** Every index of the table and its heap, per task. */
  readonly bufPerTask: number;
  readonly deadTup: number;
  readonly horizonAge: number | null;
  /** The workload's own VACUUMs in this minute (autovacuum's stand-in), ms each. */
  readonly vacuums: number[];
}

interface SystemRun {
  readonly system: PinnedSystem;
  readonly rows: Row[];
  readonly duplicates: number;
  readonly notStarted: number;
  readonly issued: number;
  readonly producerMaxLagMs: number;
  readonly pinXmin: string;
  readonly vacuumMs: number;
  readonly deadAfterVacuum: number;
  /** Seconds between the stand-in VACUUMs; 0: none (autovacuum's job). */
  readonly vacuumEveryS: number;
  readonly indexTotals: string;
}

/** A stand-in VACUUM: when, how long, and its own counts (left out of the claims' cost). */
interface VacuumRun {
  readonly t: bigint;
  readonly ms: number;
  readonly cost: Cost;
}

function buckets(s: Settings, t0: bigint): Bucket[] {
  const out: Bucket[] = [];
  let at = t0;
  const add = (label: string, phase: Bucket['phase'], seconds: number) => {
    const end = at + BigInt(seconds) * NS_PER_S;
    out.push({ label, phase, start: at, end });
    at = end;
  };
  const minutes = (phase: 'pinned' | 'after', seconds: number) => {
    for (let k = 0; k * 60 < seconds; k++) add(`${phase} ${k + 1}`, phase, Math.min(60, seconds - k * 60));
  };
  if (s.warmupS > 0) add('warm-up', 'warm-up', s.warmupS);
  add('before', 'before', s.beforeS);
  minutes('pinned', s.pinnedS);
  minutes('after', s.afterS);
  return out;
}

async function prepare(ctx: BenchContext, system: PinnedSystem, s: Settings): Promise<void> {
  if (system === 'leasehold') {
    await ctx.admin.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
    await freshSchema(ctx);
    return;
  }
  const driver = join(s.peersDir!, 'drivers', 'graphile-worker.mjs');
  if (!existsSync(driver) || !existsSync(join(s.peersDir!, 'node_modules', 'graphile-worker'))) {
    throw new Error(`BENCH_PEERS_DIR=${s.peersDir} has no drivers/graphile-worker.mjs or no node_modules/graphile-worker (npm install there)`);
  }
  await ctx.admin.query(`DROP SCHEMA IF EXISTS ${BENCH_SCHEMA} CASCADE`);
  const reset = pinnedChild('reset', childOptions(ctx, system, s));
  try {
    await reset.next('result');
  } finally {
    await reset.stop();
  }
  await settle(ctx.admin);
}

function childOptions(ctx: BenchContext, system: PinnedSystem, s: Settings, extra: Partial<PinnedChildOptions> = {}): PinnedChildOptions {
  return { system, url: ctx.url, schema: BENCH_SCHEMA, ...(s.peersDir ? { peersDir: s.peersDir } : {}), ...extra };
}

async function runSystem(ctx: BenchContext, system: PinnedSystem, s: Settings): Promise<SystemRun> {
  const log = (m: string) => ctx.log(`pinned-horizon ${SHORT[system]}: ${m}`);
  await prepare(ctx, system, s);
  const vacuumEveryS = await vacuumEvery(ctx, s);
  const starts = new Map<number, bigint>();
  let duplicates = 0;
  const commits = new Map<number, bigint>();
  const worker = pinnedChild('worker', childOptions(ctx, system, s, { concurrency: 8 }))
    .on('start', (m) => {
      const i = Number(m.i);
      if (i < 0) return; // the producer's warm-up enqueues
      if (starts.has(i)) duplicates++;
      else starts.set(i, m.t as bigint);
    })
    .on('count', () => {});
  let producer: Child | undefined;
  let pin: Awaited<ReturnType<typeof pinHorizon>> | undefined;
  try {
    await worker.next('ready');
    worker.send({ type: 'go' });
    await worker.next('started');
    await sleep(1000); // the worker is idle, waiting for a notification
    producer = pinnedChild('producer', childOptions(ctx, system, s, { rate: s.rate, poolSize: 8 })).on('commits', (m) => {
      const items = m.items as bigint[];
      for (let k = 0; k < items.length; k += 3) commits.set(Number(items[k]), items[k + 2]!);
    });
    await producer.next('ready');
    const t0 = now();
    producer.send({ type: 'go' });
    const plan = buckets(s, t0);
    const pinStart = plan.find((b) => b.phase === 'pinned')!.start;
    const pinEnd = plan.filter((b) => b.phase === 'pinned').at(-1)!.end;
    const snaps: Snapshot[] = [await snapshot(ctx.admin, system, null)];
    const vacuums: VacuumRun[] = [];
    let nextVacuum = vacuumEveryS > 0 ? t0 + BigInt(vacuumEveryS) * NS_PER_S : null;
    let pinXmin = '';
    for (const b of plan) {
      if (b.start === pinStart) {
        pin = await pinHorizon(ctx);
        pinXmin = pin.xmin;
        log(`horizon pinned by backend ${pin.pid} (backend_xmin ${pin.xmin}) for ${s.pinnedS} s`);
      }
      // the stand-in vacuums due in this minute, then its end
      while (nextVacuum !== null && nextVacuum < b.end) {
        await sleepUntil(nextVacuum);
        vacuums.push(await vacuumTable(ctx, system, pin?.pid ?? null));
        nextVacuum += BigInt(vacuumEveryS) * NS_PER_S;
      }
      await sleepUntil(b.end);
      if (producer.failure) throw producer.failure;
      if (worker.failure) throw worker.failure;
      snaps.push(await snapshot(ctx.admin, system, pin?.pid ?? null));
      if (b.end === pinEnd && b !== plan.at(-1)) {
        await pin?.release();
        log('horizon released');
      }
      const row = summarise(system, b, snaps.at(-2)!, snaps.at(-1)!, commits, starts, vacuums);
      log(`${b.label.padEnd(8)} ${describeRow(row)}`);
      if (b.phase === 'warm-up' && starts.size === 0) throw new Error(`${system}'s worker started no task during the warm-up`);
    }
    producer.send({ type: 'stop' });
    const stopped = await producer.next('stopped');
    await producer.stop();
    // every committed task should start; wait for the backlog to drain (still pinned)
    const deadline = Date.now() + 120_000;
    while ([...commits.keys()].some((i) => !starts.has(i)) && Date.now() < deadline) await sleep(100);
    await pin?.release();
    await worker.stop();
    const v0 = now();
    await ctx.admin.query('VACUUM');
    const vacuumMs = Number(now() - v0) / 1e6;
    const after = await snapshot(ctx.admin, system, null);
    log(`horizon released; VACUUM ${fmt(vacuumMs)} ms; dead tuples ${after.deadTup} (were ${snaps.at(-1)!.deadTup})`);
    const rows = plan.map((b, k) => summarise(system, b, snaps[k]!, snaps[k + 1]!, commits, starts, vacuums));
    let notStarted = 0;
    for (const i of commits.keys()) if (!starts.has(i)) notStarted++;
    return {
      system,
      rows,
      duplicates,
      notStarted,
      issued: Number(stopped.issued),
      producerMaxLagMs: Number(stopped.maxLagMs),
      pinXmin,
      vacuumMs,
      deadAfterVacuum: after.deadTup,
      vacuumEveryS,
      indexTotals: indexTotals(snaps[0]!, snaps.at(-1)!),
    };
  } finally {
    await pin?.release();
    await producer?.stop();
    await worker.stop();
  }
}

async function sleepUntil(t: bigint): Promise<void> {
  const ms = Number(t - now()) / 1e6;
  if (ms > 0) await sleep(ms);
}

async function vacuumEvery(ctx: BenchContext, s: Settings): Promise<number> {
  if (s.vacuumS !== 'auto') return s.vacuumS;
  const r = await ctx.admin.query<{ on: boolean }>(`SELECT current_setting('autovacuum')::boolean AS on`);
  return r.rows[0]!.on ? 0 : 60;
}

/**
 * Autovacuum's stand-in: `VACUUM (ANALYZE)` of the job table at autovacuum's cost limits (2 ms
 * delay per 200 credits; a manual VACUUM is not throttled). Its own index and heap reads are
 * measured (snapshots before and after, its backend's counts flushed) so the claims' cost can
 * leave them out.
 */
async function vacuumTable(ctx: BenchContext, system: PinnedSystem, pinPid: number | null): Promise<VacuumRun> {
  const { schema, table } = TABLES[system];
  const client = await ctx.admin.connect();
  try {
    await client.query(`SET vacuum_cost_delay = '2ms'; SET vacuum_cost_limit = 200`);
    const a = await snapshot(ctx.admin, system, pinPid);
    await client.query(`VACUUM (ANALYZE) ${schema}.${table}`);
    const ms = Number(now() - a.t) / 1e6;
    await client.query('SELECT pg_stat_force_next_flush()'); // flushed when the session goes idle
    await sleep(50);
    const b = await snapshot(ctx.admin, system, pinPid);
    await client.query('RESET vacuum_cost_delay; RESET vacuum_cost_limit');
    return { t: a.t, ms, cost: claimCost(system, a, b) };
  } finally {
    client.release();
  }
}

/** Tasks committed but not yet started at time t: those with commit ≤ t, less those also started by t. */
function backlogSampler(commits: Map<number, bigint>, starts: Map<number, bigint>) {
  const c: bigint[] = [];
  const e: bigint[] = [];
  for (const [i, ct] of commits) {
    c.push(ct);
    const st = starts.get(i);
    // a start the producer had not yet seen acknowledged counts from the commit
    if (st !== undefined) e.push(st > ct ? st : ct);
  }
  const cmp = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
  c.sort(cmp);
  e.sort(cmp);
  const upTo = (xs: bigint[], t: bigint) => {
    let lo = 0;
    let hi = xs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid]! <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return (t: bigint) => upTo(c, t) - upTo(e, t);
}

function summarise(
  system: PinnedSystem,
  b: Bucket,
  a: Snapshot,
  z: Snapshot,
  commits: Map<number, bigint>,
  starts: Map<number, bigint>,
  vacuums: readonly VacuumRun[],
): Row {
  const samples: number[] = [];
  let notStarted = 0;
  let tasks = 0;
  for (const [i, ct] of commits) {
    if (ct < b.start || ct >= b.end) continue;
    tasks++;
    const st = starts.get(i);
    if (st === undefined) notStarted++;
    else samples.push(Number(st - ct) / 1e6);
  }
  // whole seconds from the bucket's start, sampled after the fact from the timestamps
  const backlogAt = backlogSampler(commits, starts);
  let backlog = 0;
  for (let t = b.start + NS_PER_S; t <= b.end; t += NS_PER_S) backlog = Math.max(backlog, backlogAt(t));
  const during = vacuums.filter((v) => v.t >= a.t && v.t < z.t);
  const cost = during.reduce((c, v) => minus(c, v.cost), claimCost(system, a, z));
  const seconds = Number(b.end - b.start) / 1e9;
  return {
    label: b.label,
    phase: b.phase,
    tasks,
    rate: tasks / seconds,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: samples.length ? Math.max(...samples) : NaN,
    notStarted,
    backlog,
    claims: cost.claims,
    seqScans: cost.seqScans,
    tupPerClaim: cost.tupRead / cost.claims,
    setBufPerClaim: cost.setBlks / cost.claims,
    heapBufPerClaim: cost.heapBlks / cost.claims,
    bufPerTask: (cost.allBlks + cost.heapBlks) / tasks,
    deadTup: z.deadTup,
    horizonAge: z.horizonAge,
    vacuums: during.map((v) => v.ms),
  };
}

function describeRow(r: Row): string {
  return (
    `${fmt(r.rate)}/s, p50 ${fmt(r.p50)} ms, p99 ${fmt(r.p99)} ms, max ${fmt(r.max)} ms, backlog ≤ ${r.backlog}, ` +
    `${r.claims} claims, claim-index buffers/claim ${fmt(r.setBufPerClaim)}, dead tuples ${r.deadTup}`
  );
}

function renderRun(run: SystemRun, s: Settings): string {
  const t = TABLES[run.system];
  const lines = [
    `pinned-horizon, ${SHORT[run.system]}: ${s.rate} tasks/s, horizon pinned ${s.pinnedS} s (backend_xmin ${run.pinXmin}); ` +
      `${run.issued} tasks issued (producer at most ${fmt(run.producerMaxLagMs)} ms behind schedule); ` +
      `after release, VACUUM took ${fmt(run.vacuumMs)} ms and left ${run.deadAfterVacuum} dead tuples`,
    `claims = idx_scan of ${t.claimScan.source}${t.seqScanClaims ? ' + seq_scan of the table' : ''}; claim-index buffers = idx_blks_hit + idx_blks_read of ${t.claimSet.source} on ${t.schema}.${t.table}; ` +
      `heap = heap_blks_hit + heap_blks_read; buffers/task = every index of the table and its heap` +
      (run.vacuumEveryS
        ? `; the server's autovacuum is off, so the workload ran VACUUM (ANALYZE) on the table every ${run.vacuumEveryS} s at autovacuum's cost limits (its own reads left out of the claims' cost)`
        : ''),
    `per index over the run: ${run.indexTotals}`,
    '',
    '| minute | tasks/s | p50 ms | p99 ms | max ms | not started | max backlog | claims | seq scans | index entries read/claim | claim-index buffers/claim | heap buffers/claim | buffers/task | n_dead_tup | xmin age | VACUUM ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...run.rows.map(
      (r) =>
        `| ${r.label} | ${fmt(r.rate)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.max)} | ${r.notStarted} | ${r.backlog} | ${r.claims} | ${r.seqScans} | ` +
        `${fmt(r.tupPerClaim)} | ${fmt(r.setBufPerClaim)} | ${fmt(r.heapBufPerClaim)} | ${fmt(r.bufPerTask)} | ${r.deadTup} | ${r.horizonAge ?? '—'} | ${r.vacuums.map((v) => fmt(v)).join(', ') || '—'} |`,
    ),
  ];
  return lines.join('\n');
}

export const pinnedHorizon: Workload = {
  name: 'pinned-horizon',
  onlyWhenNamed: true,
  maxRounds: 1,
  description: () => {
    const s = settings();
    return (
      `${s.rate} tasks/s open loop (one enqueue each, its own transaction) into 1 worker process (concurrency 8, library defaults); ` +
      `${s.warmupS} s warm-up, ${s.beforeS} s before, then another session holds a REPEATABLE READ snapshot for ${s.pinnedS} s` +
      `${s.afterS ? `, then ${s.afterS} s after its release` : ''}; latency = enqueue resolved → handler start; ` +
      `claims counted by the claim index's idx_scan; ${systems(s).join(' then ')}, each on a fresh schema, VACUUM after (issue 36 item 5); ` +
      `with the server's autovacuum off, a VACUUM (ANALYZE) of the table every ${s.vacuumS === 'auto' ? 60 : s.vacuumS} s stands in for it. ` +
      `Runs only with --only pinned-horizon, one round; per-minute tables above`
    );
  },
  metrics: METRICS,
  async round(ctx): Promise<RoundResult> {
    const s = settings();
    const values: Record<string, number> = {};
    const runs: SystemRun[] = [];
    const problems: string[] = [];
    for (const system of systems(s)) {
      const run = await runSystem(ctx, system, s);
      runs.push(run);
      console.log(`\n${renderRun(run, s)}\n`);
      const p = PREFIX[system];
      const before = run.rows.find((r) => r.phase === 'before')!;
      const last = run.rows.filter((r) => r.phase === 'pinned').at(-1)!;
      values[`${p}rate_min`] = Math.min(...run.rows.filter((r) => r.phase !== 'warm-up').map((r) => r.rate));
      values[`${p}p99_before`] = before.p99;
      values[`${p}p99_last`] = last.p99;
      values[`${p}p99_ratio`] = last.p99 / before.p99;
      values[`${p}backlog`] = Math.max(...run.rows.filter((r) => r.phase === 'pinned').map((r) => r.backlog));
      values[`${p}buf_before`] = before.setBufPerClaim;
      values[`${p}buf_last`] = last.setBufPerClaim;
      values[`${p}task_buf_before`] = before.bufPerTask;
      values[`${p}task_buf_last`] = last.bufPerTask;
      if (run.duplicates) problems.push(`${system}: ${run.duplicates} tasks started twice`);
      if (run.notStarted) problems.push(`${system}: ${run.notStarted} tasks not started within 120 s of the end`);
    }
    if (values.gw_p99_last !== undefined) values.vs_gw = values.p99_last! / values.gw_p99_last;
    return { values, check: problems.length ? problems.join('; ') : 'ok', details: { settings: s, runs } };
  },
};
