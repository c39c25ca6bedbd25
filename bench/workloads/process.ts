// Processing throughput: N no-op tasks preloaded, then workers started; the clock runs from
// "go" until the database shows no pending or processing task.
import { enqueueMany } from '@leasehold/core';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import { noop } from '../lib/bench-task.js';
import { Child } from '../lib/child.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';
import { childOptions, countByStatus, freshSchema, sleep, unfinished } from './common.js';

/** Enqueues `n` bench tasks 1,000 per call (not timed). */
export async function preload(ctx: BenchContext, n: number): Promise<void> {
  for (let start = 0; start < n; start += 1000) {
    const items = Array.from({ length: Math.min(1000, n - start) }, (_, k) => ({ payload: { i: start + k } }));
    await enqueueMany(ctx.admin, noop, items, { schema: BENCH_SCHEMA });
  }
}

async function processRound(ctx: BenchContext, procs: number): Promise<RoundResult> {
  const { n, concurrency } = ctx.config.process;
  await freshSchema(ctx);
  await preload(ctx, n);
  await settle(ctx.admin, { analyze: true });
  const per = concurrency / procs;
  const counts = new Array<number>(procs).fill(0);
  let total = 0;
  let onProgress = () => {};
  const workers = counts.map(
    (_, k) =>
      new Child('worker', { ...childOptions(ctx, { concurrency: per }) }).on('count', (m) => {
        counts[k] = Number(m.n);
        total = counts.reduce((a, b) => a + b, 0);
        onProgress();
      }),
  );
  try {
    await Promise.all(workers.map((w) => w.next('ready')));
    const allHandled = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${total}/${n} handled after 120 s`)), 120_000);
      onProgress = () => {
        if (total >= n) {
          clearTimeout(timer);
          resolve();
        }
      };
    });
    const t0 = process.hrtime.bigint();
    for (const w of workers) w.send({ type: 'go' });
    await allHandled;
    const deadline = Date.now() + 60_000;
    while ((await unfinished(ctx.admin)) > 0) {
      if (Date.now() > deadline) throw new Error('tasks still unfinished 60 s after all were handled');
      await sleep(2);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const done = (await countByStatus(ctx.admin)).done ?? 0;
    return {
      values: { rate: n / seconds },
      check: total === n && done === n ? 'ok' : `handled ${total}, done ${done}, expected ${n}`,
      details: { seconds },
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
}

export const process1x8: Workload = {
  name: 'process-1x8',
  description: (c) =>
    `${c.process.n.toLocaleString('en-US')} preloaded no-op tasks, 1 worker process (createWorker, concurrency ${c.process.concurrency}, pool 10); ` +
    `from "go" until none is pending or processing`,
  metrics: [{ key: 'rate', label: 'process no-op, 1 process × 8', unit: 'jobs/s', target: { op: '>=', value: 22_000 } }],
  round: (ctx) => processRound(ctx, 1),
};

export const process2x4: Workload = {
  name: 'process-2x4',
  description: () => 'the same with 2 worker processes × concurrency 4',
  metrics: [{ key: 'rate', label: 'process no-op, 2 processes × 4', unit: 'jobs/s' }],
  round: (ctx) => processRound(ctx, 2),
};
