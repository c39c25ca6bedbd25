// Latency into idle workers: an open-loop producer enqueues one task at a time at a fixed rate;
// latency = handler start − the moment the producer's enqueue resolved (commit acknowledged).
// Both sides use process.hrtime (CLOCK_MONOTONIC), comparable across processes on one host.
import { Child, runChild } from '../lib/child.js';
import { percentile } from '../lib/stats.js';
import type { RoundResult, Workload } from '../lib/workload.js';
import { childOptions, freshSchema, sleep } from './common.js';

export const latency: Workload = {
  name: 'latency',
  description: (c) =>
    `${c.latency.n} tasks at ${c.latency.rate}/s (open loop, one enqueue each) into 1 idle worker process (concurrency 8, LISTEN/NOTIFY); ` +
    `enqueue resolved → handler start`,
  metrics: [
    { key: 'p50', label: 'enqueue → handler start p50', unit: 'ms', target: { op: '<=', value: 1 } },
    { key: 'p95', label: 'enqueue → handler start p95', unit: 'ms' },
    { key: 'p99', label: 'enqueue → handler start p99', unit: 'ms', target: { op: '<=', value: 5 } },
  ],
  async round(ctx): Promise<RoundResult> {
    const { n, rate, settleMs } = ctx.config.latency;
    await freshSchema(ctx);
    const starts = new Map<number, bigint>();
    const worker = new Child('worker', { ...childOptions(ctx, { concurrency: 8, reportStarts: true }) })
      .on('start', (m) => {
        if (Number(m.i) >= 0) starts.set(Number(m.i), m.t as bigint);
      })
      .on('count', () => {});
    try {
      await worker.next('ready');
      worker.send({ type: 'go' });
      await worker.next('started');
      await sleep(settleMs); // the worker is idle, waiting on LISTEN
      const r = await runChild('latency-producer', { ...childOptions(ctx, { n, rate }) });
      const commits = r.commits as bigint[];
      const deadline = Date.now() + 30_000;
      while (starts.size < n && Date.now() < deadline) await sleep(10);
      const samples: number[] = [];
      for (let i = 0; i < n; i++) {
        const start = starts.get(i);
        if (start !== undefined && commits[i] !== undefined) samples.push(Number(start - commits[i]!) / 1e6);
      }
      const missing = n - samples.length;
      return {
        values: { p50: percentile(samples, 50), p95: percentile(samples, 95), p99: percentile(samples, 99) },
        check: missing === 0 ? 'ok' : `${missing} tasks not started within 30 s`,
        details: { max: Math.max(...samples), negatives: samples.filter((x) => x < 0).length },
      };
    } finally {
      await worker.stop();
    }
  },
};
