// Outbox publish throughput through a real publisher, per transport: the same preloaded table
// as `outbox-unordered` (whose publisher does nothing: the ceiling), drained by one dispatcher
// process whose publisher is httpPublisher (a local endpoint answering 204), jetStreamPublisher
// (a file-backed stream, 1 replica, PubAck awaited) or amqpPublisher (a quorum queue, publisher
// confirms awaited). Each receiving end is a no-op consumer that acks. The clock runs from "go"
// until no message is pending or processing (publish rate), and until the consumer has every
// message id (end to end). A broker that is not reachable makes its workload n/a, with why.
import { createOutbox, type OutboxEvent } from '@leasehold/outbox';
import { BENCH_SCHEMA, settle } from '../lib/bench-database.js';
import { backendCpu, cpuDelta } from '../lib/server-cpu.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';
import { BrokerChild } from './broker-fork.js';
import { amqpUnavailable, natsUnavailable, startSink, type BrokerKind, type Sink } from './broker-sinks.js';
import { freshSchema, sleep } from './common.js';
import { CPU_METRICS } from './drain.js';

async function preload(ctx: BenchContext): Promise<void> {
  const { n, aggregates } = ctx.config.outbox;
  const outbox = createOutbox({ schema: BENCH_SCHEMA });
  for (let start = 0; start < n; start += 1000) {
    const events: OutboxEvent[] = Array.from({ length: Math.min(1000, n - start) }, (_, k) => ({
      aggregateType: 'bench',
      aggregateId: (start + k) % aggregates,
      eventType: 'event',
      payload: { i: start + k },
    }));
    await outbox.addMany(ctx.admin, events);
  }
}

async function countOutbox(ctx: BenchContext, statuses: readonly string[]): Promise<number> {
  const r = await ctx.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${BENCH_SCHEMA}.outbox WHERE status = ANY($1)`, [statuses]);
  return r.rows[0]!.n;
}

/** A count that stops moving this long means something is stuck, not slow. */
const STALL_MS = 30_000;

/** Polls `count` every 2 ms until it reaches `target`; throws naming `what` once it stalled. */
async function untilCount(count: () => number | Promise<number>, target: number, what: string): Promise<void> {
  let last = -1;
  let movedAt = Date.now();
  for (let n = await count(); n < target; n = await count()) {
    if (n !== last) [last, movedAt] = [n, Date.now()];
    else if (Date.now() - movedAt > STALL_MS) throw new Error(`${what}: stuck at ${n} of ${target} for ${STALL_MS / 1000} s`);
    await sleep(2);
  }
}

async function timedDrain(ctx: BenchContext, sink: Sink): Promise<RoundResult> {
  const { n, concurrency } = ctx.config.outbox;
  const child = new BrokerChild({ url: ctx.url, schema: BENCH_SCHEMA, concurrency, target: sink.target });
  try {
    await child.next('ready');
    const serverBefore = await backendCpu(ctx.admin);
    const t0 = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - t0) / 1e9;
    child.send({ type: 'go' });
    await untilCount(() => child.handled, n, 'messages published');
    await untilCount(async () => n - (await countOutbox(ctx, ['pending', 'processing'])), n, 'messages finalized');
    const publishSeconds = seconds();
    const serverMs = cpuDelta(serverBefore, await backendCpu(ctx.admin));
    await untilCount(() => sink.received().distinct, n, 'messages received by the consumer');
    const endToEndSeconds = seconds();
    child.send({ type: 'cpu' });
    const clientMs = Number((await child.next('cpu')).ms);
    child.send({ type: 'stats' });
    const failures = Number((await child.next('stats')).failures);
    const done = await countOutbox(ctx, ['done']);
    const { distinct, copies } = sink.received();
    const stored = await sink.stored();
    const problems = [
      done !== n ? `${done} of ${n} outbox messages done` : '',
      distinct !== n ? `the consumer received ${distinct} distinct ids, expected ${n}` : '',
      // + 1: the child's warm-up message
      stored !== undefined && stored !== n + 1 ? `the stream stored ${stored}, expected ${n + 1}` : '',
    ].filter(Boolean);
    return {
      values: {
        rate: n / publishSeconds,
        delivered: n / endToEndSeconds,
        clientCpu: (clientMs / n) * 1000,
        serverCpu: serverBefore.size ? (serverMs / n) * 1000 : NaN,
      },
      check: problems.length ? problems.join('; ') : 'ok',
      details: { publishSeconds, endToEndSeconds, copies, failures },
    };
  } finally {
    await child.stop();
  }
}

async function brokerRound(ctx: BenchContext, kind: BrokerKind): Promise<RoundResult> {
  await freshSchema(ctx);
  await preload(ctx);
  await settle(ctx.admin, { analyze: true });
  const sink = await startSink(kind);
  try {
    return await timedDrain(ctx, sink);
  } finally {
    await sink.close();
  }
}

const RECEIVERS: Record<BrokerKind, string> = {
  http: 'httpPublisher to a local HTTP endpoint answering 204 (keep-alive)',
  nats: 'jetStreamPublisher (PubAck awaited) to a JetStream stream (file storage, 1 replica) read by a pull consumer that acks',
  amqp: 'amqpPublisher (publisher confirms awaited) to a RabbitMQ quorum queue read by a consumer that acks (prefetch 1,000)',
};

function brokerWorkload(kind: BrokerKind, label: string, unavailable?: () => Promise<string | null>): Workload {
  return {
    name: `broker-${kind}`,
    description: (c) =>
      `${c.outbox.n.toLocaleString('en-US')} outbox messages round-robin over ${c.outbox.aggregates.toLocaleString('en-US')} aggregates, unordered; ` +
      `1 dispatcher process (createDispatcher, concurrency ${c.outbox.concurrency}, default batch), ${RECEIVERS[kind]}`,
    metrics: [
      { key: 'rate', label: `outbox publish, ${label}`, unit: 'msg/s' },
      { key: 'delivered', label: `… received by the no-op consumer, ${label}`, unit: 'msg/s' },
      ...CPU_METRICS,
    ],
    ...(unavailable ? { unavailable } : {}),
    round: (ctx) => brokerRound(ctx, kind),
  };
}

export const brokerHttp = brokerWorkload('http', 'HTTP');
export const brokerNats = brokerWorkload('nats', 'NATS JetStream', natsUnavailable);
export const brokerAmqp = brokerWorkload('amqp', 'RabbitMQ', amqpUnavailable);

/** HTTP first: the baseline the brokers sit beside. */
export const BROKER_WORKLOADS: readonly Workload[] = [brokerHttp, brokerNats, brokerAmqp];
