// What leasehold's own OpenTelemetry instrumentation costs per task above the SDK's floor (issue
// 35). In one process, with the SDK process-otel registers (lib/otel-sdk.ts), the worker's real
// TaskRunner takes claims of 64 no-op tasks (rows as the claim maps them: a stored traceparent,
// available_at) and runs them; its fenced writes are answered at once, without a database. Three
// runners, alternated round by round:
//
//   base   a runner without telemetry (as in a worker without an SDK)
//   floor  the same, its handler wrapped in the SDK calls alone (those of otel-floor.ts: extract
//          the traceparent, startSpan with the destination's attributes, the task's two, the
//          handler under context.with, the outcome, end(); the two histogram records)
//   ours   a runner with its WorkerTelemetry loaded (as in a worker with the SDK registered)
//
// "ours − floor" is what leasehold adds to the SDK's own calls; "floor − base" is the SDK's floor.
// Without an SDK (BENCH_OTEL_PARTS=none) no telemetry loads, as in a worker: "ours − base" is
// then zero by construction, and what telemetry costs per task is what the claim maps for it
// (traceparent, tracestate, available_at), measured apart.
//
//   npx tsx --conditions=@leasehold/source bench/otel-ours.ts                  # alternating rounds, µs of CPU
//
// For instruction counts (steady on a busy machine) see bench/otel-callgrind.sh: one mode per
// process (OTEL_OURS_MODE), no report.
import type { EventEmitter } from 'eventemitter3';
import type pg from 'pg';
import { taskTable, type TaskRow } from '../packages/core/src/leased-table.js';
import type { ClaimJson } from '../packages/core/src/sql/claim-json.js';
import type { Claimed } from '../packages/core/src/sql/lease-row.js';
import type { TelemetryNaming } from '../packages/core/src/telemetry/worker-telemetry.js';
import type { WorkerEventMap } from '../packages/core/src/worker/events.js';
import type { Finalizer } from '../packages/core/src/worker/finalizer.js';
import type { Held } from '../packages/core/src/worker/held-task.js';
import { normalizeLeaseWorkerOptions } from '../packages/core/src/worker/lease-worker-options.js';
import { TaskRunner } from '../packages/core/src/worker/task-runner.js';
import type { TrackedPool } from '../packages/core/src/worker/tracked-pool.js';
import { WorkerLog } from '../packages/core/src/worker/worker-log.js';
import { floorCalls } from './lib/otel-floor-calls.js';
import { registerBenchOtel } from './lib/otel-sdk.js';

const parts = process.env.BENCH_OTEL_PARTS ?? 'traces,metrics';
const ROUNDS = Number(process.env.OTEL_OURS_ROUNDS ?? 15);
const TASKS = Number(process.env.OTEL_OURS_TASKS ?? 20_480);
const WARM_UP = Number(process.env.OTEL_OURS_WARM_UP ?? 20_480);
const ONLY = process.env.OTEL_OURS_MODE;
const BATCH = 64;
const LEASE_MS = 60_000;

if (parts !== 'none') registerBenchOtel();

type Row = Claimed<TaskRow>;
type Mode = 'base' | 'floor' | 'ours';

// rows as a claim maps them: a stored traceparent, available_at and the lease in epoch ms
const table = taskTable('leasehold');
const claimJson = (table as unknown as { claimJson: ClaimJson<TaskRow> }).claimJson;
function claim(first: number): Row[] {
  const now = Date.now();
  const rows: Row[] = [];
  for (let i = first; i < first + BATCH; i++) {
    const values = [String(i + 1), 1, 1, 25, now + LEASE_MS, now - 5, null, 'noop', { i }, 0, null, null, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', null, now - 5, null, null];
    rows.push(claimJson.fromJson(values, 'bench-worker'));
  }
  return rows;
}

// the worker's naming of core's task table (as createWorker sets it)
const naming: TelemetryNaming<TaskRow> = {
  operation: 'process',
  destination: (task) => task.name,
  carrier: (task) => (task.traceparent === null ? undefined : task),
  availableAtMs: (task) => task.availableAt.getTime(),
};

// the handler of a no-op task: async, returns nothing
const noop = async (_task: Row): Promise<void> => undefined;

// the SDK calls alone, as otel-floor.ts makes them, around the handler
const floor = floorCalls(parts);
const floorHandler = (task: Row): Promise<void> => floor(task.id, task.attempts, task, noop, task);

/** A runner whose fenced writes all win, answered after each claim's handlers ran. */
async function runner(handle: (task: Row) => Promise<void>, telemetry: boolean) {
  const pool = { connect: () => Promise.reject(new Error('no database')), query: () => Promise.reject(new Error('no database')) } as unknown as pg.Pool;
  const options = normalizeLeaseWorkerOptions<TaskRow>({ pool, table, handle: (task) => handle(task), telemetry: naming, owner: 'bench-worker', concurrency: 8 });
  const writes: Held<TaskRow>[] = [];
  const finalizer = { enqueue: (h: Held<TaskRow>) => void writes.push(h), hurry: () => undefined } as unknown as Finalizer;
  const emitter = { listeners: () => [], listenerCount: () => 0, emit: () => false } as unknown as EventEmitter<WorkerEventMap<TaskRow>>;
  const r: TaskRunner<TaskRow> = new TaskRunner<TaskRow>({
    options,
    db: undefined as unknown as TrackedPool,
    finalizer,
    log: new WorkerLog(null, 'bench-worker'),
    emitter,
    onSlotFree: () => undefined,
    onWritten: () => undefined,
    running: () => true,
    onError: (error) => {
      throw error;
    },
  });
  if (telemetry) await r.loadTelemetry();
  return async (tasks: number): Promise<void> => {
    for (let i = 0; i < tasks; i += BATCH) {
      r.acceptAll(claim(i));
      // the handlers' promises settle, then their writes come back (as the finalizer's would)
      while (r.running > 0 || r.buffered > 0) await new Promise((resolve) => setImmediate(resolve));
      for (const h of writes.splice(0)) r.finalized(h, { id: h.id, won: true, status: 'done' });
    }
  };
}

const RUN: Record<Mode, (tasks: number) => Promise<void>> = {
  base: await runner(noop, false),
  floor: await runner(floorHandler, false),
  ours: await runner(noop, parts !== 'none'),
};

const modes: readonly Mode[] = ONLY === undefined ? ['base', 'floor', 'ours'] : [ONLY as Mode];
for (const mode of modes) await RUN[mode](WARM_UP);
if (ONLY !== undefined) {
  await RUN[ONLY as Mode](TASKS);
  process.exit(0);
}

const perTask: Record<Mode, number[]> = { base: [], floor: [], ours: [] };
for (let round = 0; round < ROUNDS; round++) {
  // a different order each round, so a drift in the machine's load spreads over all three
  const order = round % 2 === 0 ? modes : [...modes].reverse();
  for (const mode of order) {
    const before = process.cpuUsage();
    await RUN[mode](TASKS);
    const used = process.cpuUsage(before);
    perTask[mode].push((used.user + used.system) / TASKS);
  }
}
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const pairs = (a: Mode, b: Mode) => perTask[a].map((x, i) => x - perTask[b][i]!);
const show = (xs: readonly number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
console.log(`SDK parts: ${parts}; ${ROUNDS} rounds of ${TASKS.toLocaleString('en')} tasks per runner, alternating; µs of CPU per task, median (min–max)`);
for (const mode of modes) console.log(`  ${mode.padEnd(5)} ${show(perTask[mode])}`);
console.log(`  floor − base (the SDK's floor)          ${show(pairs('floor', 'base'))}`);
console.log(`  ours − floor (leasehold above it)       ${show(pairs('ours', 'floor'))}`);
console.log(`  ours − base  (all telemetry, per task)  ${show(pairs('ours', 'base'))}`);
process.exit(0);
