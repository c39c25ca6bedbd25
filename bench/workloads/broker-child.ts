// A bench child process for the broker workloads: one outbox dispatcher (createDispatcher, as in
// the `dispatcher` role of bench/lib/child-main.ts) whose publisher is a real one — HTTP,
// JetStream or RabbitMQ — aimed at the sink the runner started. It speaks the runner's consumer
// protocol (bench/lib/child-serve.ts): 'ready', 'go', counts, 'cpu', 'stats', 'stop'.
//   broker-child.ts '<json BrokerChildOptions>'   (forked by broker-fork.ts)
import { amqpPublisher } from '@leasehold/adapters-amqp';
import { httpPublisher } from '@leasehold/adapters-http';
import { jetStreamPublisher } from '@leasehold/adapters-nats';
import { createDispatcher, type OutboxMessage, type Publisher } from '@leasehold/outbox';
import { createPool, type ChildOptions } from '../lib/child-options.js';
import { serveConsumer } from '../lib/child-serve.js';
import { WARMUP_PREFIX, type BrokerTarget } from './broker-sinks.js';

export interface BrokerChildOptions extends ChildOptions {
  readonly target: BrokerTarget;
}

type ClosablePublisher = Publisher & { close?: () => Promise<void> };

const send = (message: Record<string, unknown>) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

function publisherFor(target: BrokerTarget): ClosablePublisher {
  const route = (prefix: string) => (m: OutboxMessage) => `${prefix}.${m.aggregateType}.${m.eventType}`;
  switch (target.kind) {
    case 'http':
      return httpPublisher({ url: target.url, timeout: '4s' });
    case 'nats':
      return jetStreamPublisher({ servers: target.servers, subject: route(target.subjectPrefix), timeout: '4s' });
    case 'amqp':
      return amqpPublisher({ url: target.url, exchange: target.exchange, routingKey: route(target.routingPrefix), timeout: '4s' });
  }
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as BrokerChildOptions;
  const pool = createPool(options, 10);
  await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT 1')));
  const publisher = publisherFor(options.target);
  // connect before 'ready', so the clock does not time the broker's handshake
  const warmup: OutboxMessage = {
    id: `${WARMUP_PREFIX}${process.pid}`, key: 'warmup', aggregateType: 'bench', eventType: 'warmup',
    payload: {}, headers: {}, attempts: 1, createdAt: new Date(),
  };
  await publisher.publish(warmup, { signal: AbortSignal.timeout(10_000) });
  let handled = 0;
  const dispatcher = createDispatcher({
    pool,
    schema: options.schema,
    concurrency: options.concurrency ?? 8,
    publisher: {
      publish: async (message, context) => {
        await publisher.publish(message, context);
        handled++;
      },
    },
  });
  let failures = 0;
  dispatcher.on('task:retrying', () => failures++);
  dispatcher.on('task:dead', () => failures++);
  dispatcher.on('worker:error', ({ error }) => console.error(`[bench broker dispatcher] ${error.message}`));
  // the runner went away (Ctrl-C, a crash): do not outlive it
  process.on('disconnect', () => process.exit(1));
  await serveConsumer(
    {
      start: () => dispatcher.start(),
      stop: async () => {
        await dispatcher.stop({ timeout: '10s' });
        await publisher.close?.();
        await pool.end();
      },
      handled: () => handled,
      stats: () => ({ failures }),
    },
    send,
  );
}

main().catch(async (error: unknown) => {
  await send({ type: 'error', message: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error) });
  process.exit(1);
});
