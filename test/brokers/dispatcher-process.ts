// One real outbox dispatcher process for the broker tests (spawned by broker-fleet.ts, SIGKILLed
// at will):
//
//   node --conditions=@leasehold/source --import tsx test/brokers/dispatcher-process.ts <db url> <json options>
//
// It publishes the outbox of its database to JetStream or RabbitMQ and prints one JSON line per
// event worth counting: `started`, `dup` (a PubAck that says the stream already had the message),
// `retry`, `dead`, `lost`, then `stopped` after SIGTERM. With `holdAfterAckMs` it waits that long
// after the broker acknowledged each message before reporting success: a SIGKILL then finds
// messages the broker holds but the outbox still has as processing, which another dispatcher
// must publish again (the fault the message id exists for).
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createDispatcher, type Publisher } from '@leasehold/outbox';
import { jetStreamPublisher } from '@leasehold/adapters-nats';
import { amqpPublisher } from '@leasehold/adapters-amqp';

/** What the parent passes as the second argument. */
export interface DispatcherProcessOptions {
  readonly broker: 'nats' | 'amqp';
  /** NATS: server URLs; AMQP: one amqp:// URL. */
  readonly target: readonly string[];
  /** AMQP exchange. */
  readonly exchange?: string;
  /** Prefix of NATS subjects / AMQP routing keys. */
  readonly prefix: string;
  readonly owner: string;
  readonly leaseMs: number;
  readonly publishTimeoutMs: number;
  readonly brokerTimeoutMs: number;
  readonly concurrency: number;
  readonly holdAfterAckMs: number;
}

const [url, json] = process.argv.slice(2);
if (!url || !json) throw new Error('usage: dispatcher-process.ts <database url> <json options>');
const o = JSON.parse(json) as DispatcherProcessOptions;
const print = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ pid: process.pid, ...event })}\n`);

let published = 0;
let duplicates = 0;
const route = (m: { aggregateType: string; eventType: string }) => `${o.prefix}.${m.aggregateType}.${m.eventType}`;
const inner =
  o.broker === 'nats'
    ? jetStreamPublisher({
        servers: o.target,
        subject: route,
        timeout: o.brokerTimeoutMs,
        onPublished: ({ message, duplicate }) => {
          published++;
          if (duplicate) {
            duplicates++;
            print({ e: 'dup', id: message.id });
          }
        },
      })
    : amqpPublisher({ url: o.target[0]!, exchange: o.exchange ?? '', routingKey: route, timeout: o.brokerTimeoutMs, onPublished: () => published++ });
const publisher: Publisher = {
  async publish(message, context) {
    await inner.publish(message, context);
    if (o.holdAfterAckMs > 0) await sleep(o.holdAfterAckMs);
  },
};

const pool = new pg.Pool({ connectionString: url, max: o.concurrency + 3, application_name: o.owner });
pool.on('error', () => undefined);
const dispatcher = createDispatcher({
  pool,
  publisher,
  owner: `${o.owner}:${process.pid}`,
  concurrency: o.concurrency,
  lease: o.leaseMs,
  publishTimeout: o.publishTimeoutMs,
  pollInterval: 100,
  backoff: { base: 50, cap: 1_000 },
  logger: null,
});
dispatcher.on('task:retrying', ({ task, error }) => print({ e: 'retry', id: task.id, message: error.message.slice(0, 300) }));
dispatcher.on('task:dead', ({ task, error }) => print({ e: 'dead', id: task.id, message: String(error?.message ?? error).slice(0, 300) }));
dispatcher.on('task:lease-lost', ({ task }) => print({ e: 'lost', id: task.id }));
dispatcher.on('worker:error', ({ error }) => print({ e: 'error', message: error.message }));

process.once('SIGTERM', () => {
  void (async () => {
    await dispatcher.stop({ timeout: '5s' });
    await inner.close();
    await pool.end();
    print({ e: 'stopped', published, duplicates });
    process.exit(0);
  })();
});

await dispatcher.start();
print({ e: 'started' });
