// Outbox dispatch throughput: N messages over A aggregates preloaded with `addMany`, then one
// dispatcher process (createDispatcher, concurrency 8, a publisher that only counts) started;
// the clock runs from "go" until no message is pending or processing. Unordered: every message
// is independent. Ordered: each aggregate's messages go out one at a time in id order.
import { createOutbox, type OutboxEvent } from '@leasehold/outbox';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';
import { childOptions, freshSchema } from './common.js';
import { CPU_METRICS, drain } from './drain.js';

const EVENT = 'bench.event';

async function preloadOutbox(ctx: BenchContext, ordered: boolean): Promise<void> {
  const { n, aggregates } = ctx.config.outbox;
  const outbox = createOutbox({ schema: BENCH_SCHEMA, orderedEventTypes: ordered ? [EVENT] : [] });
  for (let start = 0; start < n; start += 1000) {
    // round-robin over the aggregates, so every aggregate has a backlog all along
    const events: OutboxEvent[] = Array.from({ length: Math.min(1000, n - start) }, (_, k) => ({
      aggregateType: 'bench',
      aggregateId: (start + k) % aggregates,
      eventType: EVENT,
      payload: { i: start + k },
    }));
    await outbox.addMany(ctx.admin, events);
  }
}

async function countOutbox(ctx: BenchContext, statuses: readonly string[]): Promise<number> {
  const r = await ctx.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${BENCH_SCHEMA}.outbox WHERE status = ANY($1)`, [statuses]);
  return r.rows[0]!.n;
}

async function outboxRound(ctx: BenchContext, ordered: boolean): Promise<RoundResult> {
  const { n, concurrency } = ctx.config.outbox;
  await freshSchema(ctx);
  await preloadOutbox(ctx, ordered);
  await settle(ctx.admin, { analyze: true });
  const r = await drain(ctx, {
    role: 'dispatcher',
    n,
    children: [childOptions(ctx, { concurrency })],
    unfinished: () => countOutbox(ctx, ['pending', 'processing']),
  });
  const done = await countOutbox(ctx, ['done']);
  const outOfOrder = Number(r.stats[0]?.outOfOrder ?? 0);
  const problems = [
    r.handled !== n || done !== n ? `published ${r.handled}, done ${done}, expected ${n}` : '',
    ordered && outOfOrder > 0 ? `${outOfOrder} messages published before an earlier one of their aggregate` : '',
  ].filter(Boolean);
  return {
    values: { rate: r.rate, clientCpu: r.clientCpu, serverCpu: r.serverCpu },
    check: problems.length ? problems.join('; ') : 'ok',
    details: { seconds: r.seconds },
  };
}

const describe = (ordered: boolean) => (c: BenchContext['config']) =>
  `${c.outbox.n.toLocaleString('en-US')} messages round-robin over ${c.outbox.aggregates.toLocaleString('en-US')} aggregates, ` +
  `${ordered ? 'ordered per aggregate' : 'unordered'}; 1 dispatcher process (createDispatcher, concurrency ${c.outbox.concurrency}, ` +
  `default batch), publisher does nothing`;

export const outboxUnordered: Workload = {
  name: 'outbox-unordered',
  description: describe(false),
  metrics: [{ key: 'rate', label: 'outbox dispatch, unordered', unit: 'msg/s' }, ...CPU_METRICS],
  round: (ctx) => outboxRound(ctx, false),
};

export const outboxOrdered: Workload = {
  name: 'outbox-ordered',
  description: describe(true),
  metrics: [{ key: 'rate', label: 'outbox dispatch, ordered per aggregate', unit: 'msg/s' }, ...CPU_METRICS],
  round: (ctx) => outboxRound(ctx, true),
};
