// Enqueue throughput: one transaction per task from 8 clients, and the bulk API 1,000 per call.
import { runTimedChild } from '../lib/child.js';
import { backendCpu } from '../lib/server-cpu.js';
import type { BenchContext, Metric, RoundResult, Workload } from '../lib/workload.js';
import { childOptions, countByStatus, freshSchema } from './common.js';

const CPU_METRICS: readonly Metric[] = [
  { key: 'clientCpu', label: 'producer process CPU per 1,000', unit: 'ms' },
  { key: 'serverCpu', label: 'its PostgreSQL backends’ CPU per 1,000', unit: 'ms' },
];

async function enqueueRound(ctx: BenchContext, role: string, n: number, extra: Record<string, number>): Promise<RoundResult> {
  await freshSchema(ctx);
  const { result, serverCpuMs, measured } = await runTimedChild(role, { ...childOptions(ctx, { n, ...extra }) }, () => backendCpu(ctx.admin));
  const stored = (await countByStatus(ctx.admin)).pending ?? 0;
  const expected = n + Number(result.warmup);
  return {
    values: {
      rate: n / (Number(result.ns) / 1e9),
      clientCpu: (Number(result.cpuMs) / n) * 1000,
      serverCpu: measured ? (serverCpuMs / n) * 1000 : NaN,
    },
    check: stored === expected ? 'ok' : `stored ${stored}, expected ${expected}`,
  };
}

export const enqueueSingle: Workload = {
  name: 'enqueue-single',
  description: (c) =>
    `${c.enqueueSingle.n.toLocaleString('en-US')} × enqueue(pool, task, payload), each its own transaction, ` +
    `${c.enqueueSingle.clients} concurrent loops sharing a pool of ${c.enqueueSingle.clients + 2}`,
  metrics: [
    { key: 'rate', label: 'enqueue, 1 transaction per task, 8 clients', unit: 'jobs/s', target: { op: '>=', value: 5000 } },
    ...CPU_METRICS,
  ],
  round: (ctx) => enqueueRound(ctx, 'enqueue-single', ctx.config.enqueueSingle.n, { clients: ctx.config.enqueueSingle.clients }),
};

export const enqueueBulk: Workload = {
  name: 'enqueue-bulk',
  description: (c) =>
    `${c.enqueueBulk.n.toLocaleString('en-US')} tasks through enqueueMany(pool, task, items), ${c.enqueueBulk.chunk} per call, calls sequential`,
  metrics: [{ key: 'rate', label: 'enqueue, bulk 1,000 per call', unit: 'jobs/s', target: { op: '>=', value: 75_000 } }, ...CPU_METRICS],
  round: (ctx) => enqueueRound(ctx, 'enqueue-bulk', ctx.config.enqueueBulk.n, { chunk: ctx.config.enqueueBulk.chunk }),
};
