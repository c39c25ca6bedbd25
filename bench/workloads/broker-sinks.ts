// The receiving ends of the broker workloads, in the runner's process: a local HTTP endpoint, a
// JetStream stream with a pull consumer, a RabbitMQ quorum queue with a consumer. Each is a
// no-op consumer: it acknowledges every message and counts the distinct message ids it saw.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { connect as amqpConnect } from 'amqplib';

export type BrokerKind = 'http' | 'nats' | 'amqp';

/** Where the dispatcher child publishes (sent to it as JSON). */
export type BrokerTarget =
  | { readonly kind: 'http'; readonly url: string }
  | { readonly kind: 'nats'; readonly servers: string; readonly subjectPrefix: string }
  | { readonly kind: 'amqp'; readonly url: string; readonly exchange: string; readonly routingPrefix: string };

/** A running no-op consumer. */
export interface Sink {
  readonly target: BrokerTarget;
  /** Distinct message ids received (warm-up messages left out), and every copy. */
  received(): { readonly distinct: number; readonly copies: number };
  /** Messages the broker stored, when it can say (JetStream: the stream's count). */
  stored(): Promise<number | undefined>;
  close(): Promise<void>;
}

export const NATS_URL = process.env.BENCH_NATS_URL ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const AMQP_URL = process.env.BENCH_AMQP_URL ?? process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** Id of the message a child publishes before 'ready', so connecting is not timed. */
export const WARMUP_PREFIX = 'warmup-';

const PROBE_MS = 2_000;

/** Why the workload cannot run here (no JetStream reachable), or null. */
export async function natsUnavailable(): Promise<string | null> {
  try {
    const nc = await natsConnect({ servers: NATS_URL, timeout: PROBE_MS, maxReconnectAttempts: 0 });
    try {
      await jetstreamManager(nc, { timeout: PROBE_MS }); // checks that JetStream is enabled
    } finally {
      await nc.close();
    }
    return null;
  } catch (error) {
    return `no JetStream at ${NATS_URL} (${(error as Error).message}); set BENCH_NATS_URL`;
  }
}

/** Why the workload cannot run here (no RabbitMQ reachable), or null. */
export async function amqpUnavailable(): Promise<string | null> {
  try {
    const connection = await amqpConnect(AMQP_URL, { timeout: PROBE_MS });
    await connection.close();
    return null;
  } catch (error) {
    return `no RabbitMQ at ${new URL(AMQP_URL).host} (${(error as Error).message}); set BENCH_AMQP_URL`;
  }
}

export function startSink(kind: BrokerKind): Promise<Sink> {
  switch (kind) {
    case 'http':
      return httpSink();
    case 'nats':
      return natsSink();
    case 'amqp':
      return amqpSink();
  }
}

function counter() {
  const seen = new Set<string>();
  let copies = 0;
  return {
    add(id: string | undefined) {
      if (id === undefined || id.startsWith(WARMUP_PREFIX)) return;
      copies++;
      seen.add(id);
    },
    received: () => ({ distinct: seen.size, copies }),
  };
}

/** An HTTP endpoint answering 204 to every POST, counting `Idempotency-Key`s. */
async function httpSink(): Promise<Sink> {
  const count = counter();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = req.headers['idempotency-key'];
      count.add(typeof key === 'string' ? key : undefined);
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    target: { kind: 'http', url: `http://127.0.0.1:${port}/events` },
    received: count.received,
    stored: () => Promise.resolve(undefined),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A stream of its own (file storage, 1 replica, 2 min duplicate window) and a pull consumer that acks. */
async function natsSink(): Promise<Sink> {
  const run = randomUUID().slice(0, 8);
  const stream = `LH_BENCH_${run}`;
  const subjectPrefix = `lhbench${run}`;
  const nc = await natsConnect({ servers: NATS_URL, name: 'leasehold-bench-sink' });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`], duplicate_window: 120e9 });
  await jsm.consumers.add(stream, { durable_name: 'bench', ack_policy: AckPolicy.Explicit, max_ack_pending: 10_000 });
  const messages = await (await jetstream(nc).consumers.get(stream, 'bench')).consume({ max_messages: 1_000 });
  const count = counter();
  const loop = (async () => {
    for await (const m of messages) {
      count.add(m.headers?.get('Nats-Msg-Id'));
      m.ack();
    }
  })();
  return {
    target: { kind: 'nats', servers: NATS_URL, subjectPrefix },
    received: count.received,
    stored: async () => (await jsm.streams.info(stream)).state.messages,
    close: async () => {
      await messages.close();
      await loop.catch(() => undefined);
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    },
  };
}

/** A topic exchange and a quorum queue of its own, and a consumer that acks (prefetch 1,000). */
async function amqpSink(): Promise<Sink> {
  const run = randomUUID().slice(0, 8);
  const exchange = `lh-bench-${run}`;
  const queue = `lh-bench-${run}`;
  const routingPrefix = `lhbench${run}`;
  const connection = await amqpConnect(AMQP_URL);
  connection.on('error', () => undefined);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await channel.bindQueue(queue, exchange, `${routingPrefix}.#`);
  await channel.prefetch(1_000);
  const count = counter();
  await channel.consume(queue, (m) => {
    if (!m) return;
    count.add(typeof m.properties.messageId === 'string' ? m.properties.messageId : undefined);
    channel.ack(m);
  });
  return {
    target: { kind: 'amqp', url: AMQP_URL, exchange, routingPrefix },
    received: count.received,
    stored: () => Promise.resolve(undefined),
    close: async () => {
      await channel.deleteQueue(queue).catch(() => undefined);
      await channel.deleteExchange(exchange).catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
  };
}
