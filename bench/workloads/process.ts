// Processing throughput: N no-op tasks preloaded, then worker processes started; the clock runs
// from "go" until the database shows no pending or processing task.
import { enqueueMany } from '@leasehold/core';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import { noop } from '../lib/bench-task.js';
import type { BenchConfig } from '../lib/options.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';
import { childOptions, countByStatus, freshSchema, unfinished } from './common.js';
import { CPU_METRICS, drain } from './drain.js';

/** Enqueues `n` bench tasks 1,000 per call (not timed). */
export async function preload(ctx: BenchContext, n: number): Promise<void> {
  for (let start = 0; start < n; start += 1000) {
    const items = Array.from({ length: Math.min(1000, n - start) }, (_, k) => ({ payload: { i: start + k } }));
    await enqueueMany(ctx.admin, noop, items, { schema: BENCH_SCHEMA });
  }
}

/** Drains `n` preloaded no-op tasks with `procs` worker processes; `otel`: each with an OpenTelemetry SDK. */
export async function processRound(ctx: BenchContext, procs: number, { otel = false } = {}): Promise<RoundResult> {
  const { n, concurrency, prefetch, batch } = ctx.config.process;
  await freshSchema(ctx);
  await preload(ctx, n);
  // as if each task was enqueued inside a request's span: the worker's span continues it
  if (otel) await ctx.admin.query(`UPDATE ${BENCH_SCHEMA}.task SET traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'`);
  await settle(ctx.admin, { analyze: true });
  const options = childOptions(ctx, { concurrency: concurrency / procs, prefetch, batch, otel });
  const r = await drain(ctx, { role: 'worker', n, children: Array.from({ length: procs }, () => options), unfinished: () => unfinished(ctx.admin) });
  const done = (await countByStatus(ctx.admin)).done ?? 0;
  return {
    values: { rate: r.rate, clientCpu: r.clientCpu, serverCpu: r.serverCpu },
    check: r.handled === n && done === n ? 'ok' : `handled ${r.handled}, done ${done}, expected ${n}`,
    details: { seconds: r.seconds },
  };
}

const settings = (c: BenchConfig) => `prefetch ${c.process.prefetch}, batch ${c.process.batch}, pool 10`;

export const process1x8: Workload = {
  name: 'process-1x8',
  description: (c) =>
    `${c.process.n.toLocaleString('en-US')} preloaded no-op tasks, 1 worker process (createWorker: concurrency ${c.process.concurrency}, ${settings(c)}); ` +
    `from "go" until none is pending or processing`,
  metrics: [{ key: 'rate', label: 'process no-op, 1 process × 8', unit: 'jobs/s', target: { op: '>=', value: 22_000 } }, ...CPU_METRICS],
  round: (ctx) => processRound(ctx, 1),
};

export const processOtel: Workload = {
  name: 'process-otel',
  description: (c) =>
    `${c.process.n.toLocaleString('en-US')} tasks as in process-1x8, with an OpenTelemetry SDK registered in the worker (a span per task, every one sampled, batched into an in-memory exporter; ` +
    `counters and histograms collected every second); each task carries a stored traceparent`,
  metrics: [{ key: 'rate', label: 'process no-op, 1 process × 8, OpenTelemetry SDK', unit: 'jobs/s' }, ...CPU_METRICS],
  round: (ctx) => processRound(ctx, 1, { otel: true }),
};

export const process2x4: Workload = {
  name: 'process-2x4',
  description: (c) => `the same with 2 worker processes × concurrency ${c.process.concurrency / 2} (${settings(c)} each)`,
  metrics: [{ key: 'rate', label: 'process no-op, 2 processes × 4', unit: 'jobs/s' }, ...CPU_METRICS],
  round: (ctx) => processRound(ctx, 2),
};
