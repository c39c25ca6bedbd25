// Heartbeat cost: one worker holds many long tasks in flight; every statement it sends is
// counted by kind. The heartbeat should be one statement per tick whatever the task count.
import { settle } from '../lib/bench-database.js';
import { Child } from '../lib/child.js';
import { median } from '../lib/stats.js';
import type { RoundResult, Workload } from '../lib/workload.js';
import { childOptions, countByStatus, freshSchema, sleep } from './common.js';
import { preload } from './process.js';

interface Stats {
  counts: Record<string, number>;
  heartbeats: { t: number; rows: number; ms: number }[];
  inFlight: number;
  lost: number;
}

export const heartbeat: Workload = {
  name: 'heartbeat',
  description: (c) =>
    `${c.heartbeat.tasks.toLocaleString('en-US')} long tasks in flight in 1 worker (concurrency ${c.heartbeat.tasks}, lease ${c.heartbeat.leaseMs} ms, ` +
    `heartbeat every lease/3); statements counted over ${c.heartbeat.measureMs / 1000} s`,
  metrics: [
    { key: 'perTick', label: 'heartbeat statements per worker per tick', unit: 'stmt', target: { op: '<=', value: 1 } },
    { key: 'perSecond', label: 'heartbeat statements per second', unit: 'stmt/s' },
    { key: 'rowsPerStatement', label: 'leases extended per heartbeat statement', unit: 'rows' },
    { key: 'statementMs', label: 'heartbeat statement round trip, median', unit: 'ms' },
    { key: 'otherPerSecond', label: 'other worker statements per second while busy', unit: 'stmt/s' },
  ],
  async round(ctx): Promise<RoundResult> {
    const { tasks, leaseMs, measureMs } = ctx.config.heartbeat;
    const intervalMs = Math.floor(leaseMs / 3); // the worker's default heartbeat interval
    await freshSchema(ctx);
    await preload(ctx, tasks);
    await settle(ctx.admin, { analyze: true });
    let handled = 0;
    const worker = new Child('worker', {
      ...childOptions(ctx, { concurrency: tasks, hold: true, leaseMs, countStatements: true }),
    }).on('count', (m) => void (handled = Number(m.n)));
    try {
      await worker.next('ready');
      worker.send({ type: 'go' });
      const deadline = Date.now() + 60_000;
      while (handled < tasks) {
        if (Date.now() > deadline) throw new Error(`only ${handled}/${tasks} tasks in flight after 60 s`);
        await sleep(10);
      }
      worker.send({ type: 'reset-stats' });
      await worker.next('stats-reset');
      await sleep(measureMs);
      worker.send({ type: 'stats' });
      const stats = (await worker.next('stats')) as unknown as Stats;
      const beats = stats.heartbeats;
      const first = beats[0];
      const last = beats[beats.length - 1];
      // ticks between the first and the last heartbeat seen (timer drift stays well under a
      // tick), so a window that is not a whole number of ticks does not skew the figure
      const ticks = first && last ? Math.round((last.t - first.t) / intervalMs) + 1 : NaN;
      const other = Object.entries(stats.counts)
        .filter(([k]) => k !== 'heartbeat')
        .reduce((a, [, v]) => a + v, 0);
      const rows = beats.reduce((a, b) => a + b.rows, 0) / beats.length;
      const processing = (await countByStatus(ctx.admin)).processing ?? 0;
      const problems = [
        stats.lost > 0 ? `${stats.lost} leases lost` : '',
        stats.inFlight !== tasks ? `${stats.inFlight} in flight, expected ${tasks}` : '',
        processing !== tasks ? `${processing} rows processing, expected ${tasks}` : '',
        beats.length < 2 ? `only ${beats.length} heartbeats seen` : '',
      ].filter(Boolean);
      return {
        values: {
          perTick: beats.length / ticks,
          perSecond: first && last && beats.length > 1 ? ((beats.length - 1) / (last.t - first.t)) * 1000 : NaN,
          rowsPerStatement: rows,
          statementMs: median(beats.map((b) => b.ms)),
          otherPerSecond: (other / measureMs) * 1000,
        },
        check: problems.length ? problems.join('; ') : 'ok',
        details: { counts: stats.counts, heartbeats: beats.length, intervalMs },
      };
    } finally {
      await worker.stop();
    }
  },
};
