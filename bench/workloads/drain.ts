// The timed part of every throughput-of-processing workload: start consumer children (task
// workers or outbox dispatchers) on a preloaded table, and time from "go" until the database
// shows nothing left to do. Also measures CPU per item in the children and in their backends.
import { Child } from '../lib/child.js';
import type { ChildOptions } from '../lib/child-options.js';
import { backendCpu, cpuDelta } from '../lib/server-cpu.js';
import type { BenchContext, Metric } from '../lib/workload.js';
import { sleep } from './common.js';

/** CPU per item is steadier than items/s on a shared machine: it tells variants apart under load. */
export const CPU_METRICS: readonly Metric[] = [
  { key: 'clientCpu', label: 'consumer process CPU per 1,000', unit: 'ms' },
  { key: 'serverCpu', label: 'their PostgreSQL backends’ CPU per 1,000', unit: 'ms' },
];

export interface DrainResult {
  readonly rate: number;
  readonly seconds: number;
  readonly handled: number;
  readonly clientCpu: number;
  readonly serverCpu: number;
  /** The children's final 'stats' answers. */
  readonly stats: Record<string, unknown>[];
}

export async function drain(
  ctx: BenchContext,
  o: { role: 'worker' | 'dispatcher'; n: number; children: ChildOptions[]; unfinished: () => Promise<number> },
): Promise<DrainResult> {
  const { n } = o;
  const limitMs = ctx.config.quick ? 60_000 : 120_000;
  const counts = o.children.map(() => 0);
  let total = 0;
  let onProgress = () => {};
  const children = o.children.map((options, k) =>
    new Child(o.role, { ...options }).on('count', (m) => {
      counts[k] = Number(m.n);
      total = counts.reduce((a, b) => a + b, 0);
      onProgress();
    }),
  );
  try {
    await Promise.all(children.map((c) => c.next('ready')));
    const allHandled = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${total}/${n} handled after ${limitMs / 1000} s`)), limitMs);
      onProgress = () => {
        if (total < n) return;
        clearTimeout(timer);
        resolve();
      };
    });
    const serverBefore = await backendCpu(ctx.admin);
    const t0 = process.hrtime.bigint();
    for (const c of children) c.send({ type: 'go' });
    await allHandled;
    const deadline = Date.now() + limitMs / 4;
    while ((await o.unfinished()) > 0) {
      if (Date.now() > deadline) throw new Error(`rows still unfinished ${limitMs / 4000} s after all were handled`);
      await sleep(2);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const serverMs = cpuDelta(serverBefore, await backendCpu(ctx.admin));
    let clientMs = 0;
    const stats: Record<string, unknown>[] = [];
    for (const c of children) {
      c.send({ type: 'cpu' });
      clientMs += Number((await c.next('cpu')).ms);
      c.send({ type: 'stats' });
      stats.push(await c.next('stats'));
    }
    return {
      rate: n / seconds,
      seconds,
      handled: total,
      clientCpu: (clientMs / n) * 1000,
      serverCpu: serverBefore.size ? (serverMs / n) * 1000 : NaN,
      stats,
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}
