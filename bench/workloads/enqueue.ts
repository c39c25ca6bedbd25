// Enqueue throughput: one transaction per task from 8 clients, and the bulk API 1,000 per call.
import { runChild } from '../lib/child.js';
import type { RoundResult, Workload } from '../lib/workload.js';
import { childOptions, countByStatus, freshSchema } from './common.js';

export const enqueueSingle: Workload = {
  name: 'enqueue-single',
  description: (c) =>
    `${c.enqueueSingle.n.toLocaleString('en-US')} × enqueue(pool, task, payload), each its own transaction, ` +
    `${c.enqueueSingle.clients} concurrent loops sharing a pool of ${c.enqueueSingle.clients + 2}`,
  metrics: [{ key: 'rate', label: 'enqueue, 1 transaction per task, 8 clients', unit: 'jobs/s', target: { op: '>=', value: 5000 } }],
  async round(ctx): Promise<RoundResult> {
    const { n, clients } = ctx.config.enqueueSingle;
    await freshSchema(ctx);
    const r = await runChild('enqueue-single', { ...childOptions(ctx, { n, clients }) });
    const stored = (await countByStatus(ctx.admin)).pending ?? 0;
    const expected = n + Number(r.warmup);
    return {
      values: { rate: n / (Number(r.ns) / 1e9) },
      check: stored === expected ? 'ok' : `stored ${stored}, expected ${expected}`,
    };
  },
};

export const enqueueBulk: Workload = {
  name: 'enqueue-bulk',
  description: (c) =>
    `${c.enqueueBulk.n.toLocaleString('en-US')} tasks through enqueueMany(pool, task, items), ${c.enqueueBulk.chunk} per call, calls sequential`,
  metrics: [{ key: 'rate', label: 'enqueue, bulk 1,000 per call', unit: 'jobs/s', target: { op: '>=', value: 75_000 } }],
  async round(ctx): Promise<RoundResult> {
    const { n, chunk } = ctx.config.enqueueBulk;
    await freshSchema(ctx);
    const r = await runChild('enqueue-bulk', { ...childOptions(ctx, { n, chunk }) });
    const stored = (await countByStatus(ctx.admin)).pending ?? 0;
    const expected = n + Number(r.warmup);
    return {
      values: { rate: n / (Number(r.ns) / 1e9) },
      check: stored === expected ? 'ok' : `stored ${stored}, expected ${expected}`,
    };
  },
};
