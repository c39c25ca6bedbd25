// Outbox → dispatchers → amqpPublisher → RabbitMQ (quorum queue) → consumeAmqp (inbox) → the
// consumer's ledger, against the machine's RabbitMQ (127.0.0.1:5672, or AMQP_URL): 4 dispatcher
// processes of which 2 are SIGKILLed mid-run; a 10 s outage made by cutting a TCP proxy between
// the publisher and the broker (the shared server keeps running); unroutable and missing-exchange
// classification. RabbitMQ keeps both copies of a message published again, so the consumer's
// inbox is what absorbs them: the test counts them.
//
// Sizes: BROKER_EVENTS (default 10000), BROKER_OUTAGE_EVENTS (1000), BROKER_OUTAGE_MS (10000).
import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { createDispatcher, createOutbox, type OutboxMessage } from '@leasehold/outbox';
import { amqpPublisher, consumeAmqp, type InboxConsumer } from '@leasehold/adapters-amqp';
import type { Inbox } from '@leasehold/adapters-http';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { BrokerFleet } from './broker-fleet.js';
import {
  applyToLedger,
  envInt,
  expectExactlyOnce,
  installConsumer,
  ledgerCount,
  outboxCounts,
  seedEvents,
  summary,
  waitForCount,
  waitUntil,
  CONSUMER_STALL_MS,
} from './scenario.js';
import { TcpProxy } from './tcp-proxy.js';

const t = useTestDatabase();
const track = useWorkers();
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

let fleet: BrokerFleet | undefined;
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await fleet?.destroy();
  fleet = undefined;
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** A topic exchange and a quorum queue of this run's own, bound to `<prefix>.#`. */
async function makeTopology(): Promise<{ connection: ChannelModel; exchange: string; queue: string; prefix: string }> {
  const run = randomUUID().slice(0, 8);
  const exchange = `lh-test-${run}`;
  const queue = `lh-test-${run}`;
  const prefix = `lhtest${run}`;
  const connection = await connect(AMQP_URL);
  connection.on('error', () => undefined);
  closers.push(() => connection.close());
  const admin = await connection.createChannel();
  await admin.assertExchange(exchange, 'topic', { durable: true });
  await admin.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await admin.bindQueue(queue, exchange, `${prefix}.#`);
  closers.push(async () => {
    const ch = await connection.createChannel();
    await ch.deleteQueue(queue);
    await ch.deleteExchange(exchange);
    await ch.close();
  });
  await admin.close();
  return { connection, exchange, queue, prefix };
}

async function startConsumer(connection: ChannelModel, queue: string, inbox: Inbox): Promise<InboxConsumer> {
  const channel = await connection.createChannel();
  const running = await consumeAmqp({ channel, queue, db: t.pool, inbox, concurrency: 8, prefetch: 64, retryDelay: 200, apply: (event, client) => applyToLedger(client, event) });
  closers.push(() => running.stop({ timeout: '10s' }));
  return running;
}

/** Waits for the consumer to apply `events`; when it stalls, says what the queue holds. */
async function consumerApplied(connection: ChannelModel, queue: string, consumer: InboxConsumer, events: number): Promise<void> {
  await waitForCount(() => ledgerCount(t.db), events, 'the consumer applying every event', CONSUMER_STALL_MS, async () => {
    const probe = await connection.createChannel();
    try {
      const q = await probe.checkQueue(queue);
      return { stats: consumer.stats, ready: q.messageCount, consumers: q.consumerCount };
    } finally {
      await probe.close();
    }
  });
}

const route = (prefix: string) => (m: OutboxMessage) => `${prefix}.${m.aggregateType}.${m.eventType}`;

describe('RabbitMQ: outbox → amqpPublisher → quorum queue → consumeAmqp (inbox)', () => {
  it('machine RabbitMQ: 4 dispatcher processes, 2 SIGKILLed mid-run: every event applied once, the copies published again absorbed by the inbox', { timeout: 300_000 }, async () => {
    const events = envInt('BROKER_EVENTS', 10_000);
    const { connection, exchange, queue, prefix } = await makeTopology();
    const inbox = await installConsumer(t.db, t.pool);
    const ids = await seedEvents(t.db, events);
    const consumer = await startConsumer(connection, queue, inbox);

    const f = (fleet = new BrokerFleet(t.url));
    const base = { broker: 'amqp', target: [AMQP_URL], exchange, prefix, leaseMs: 3_000, publishTimeoutMs: 300, brokerTimeoutMs: 250, concurrency: 8 } as const;
    // the victims hold each confirmed message 30 ms before reporting success, so a SIGKILL
    // always finds some that the queue has but the outbox does not know were delivered
    const victims = await Promise.all([0, 1].map((i) => f.spawn({ ...base, owner: `victim${i}`, holdAfterAckMs: 30 })));
    await Promise.all([0, 1].map((i) => f.spawn({ ...base, owner: `survivor${i}`, holdAfterAckMs: 0 })));
    const started = Date.now();
    const done = async () => (await outboxCounts(t.db)).done ?? 0;
    // hang guards, not speed claims: a victim's messages are taken over one lease after its
    // death, and the survivors never all wait at once; five leases without one more done is a hang
    const stallMs = 5 * base.leaseMs;
    for (const [k, victim] of victims.entries()) {
      await waitForCount(done, events * (0.25 + k * 0.25), `${25 + k * 25}% delivered`, stallMs);
      await f.kill(victim);
    }
    const killedAt = Date.now() - started;
    await waitForCount(done, events, 'every outbox message done', stallMs, () => outboxCounts(t.db));
    await consumerApplied(connection, queue, consumer, events);
    const elapsedMs = Date.now() - started;
    await f.stopAll();
    // every copy in the queue reached the consumer: the queue is empty and nothing is unacked
    const probe = await connection.createChannel();
    await waitUntil(async () => {
      const q = await probe.checkQueue(queue);
      return q.messageCount === 0 && consumer.stats.applied + consumer.stats.duplicates >= events;
    }, 'the queue to drain', 30_000);
    await probe.close();
    await consumer.stop();

    const outcome = await expectExactlyOnce(t.db, ids);
    expect(f.crashes()).toEqual([]);
    expect(f.count('dead')).toBe(0);
    expect(consumer.stats.applied).toBe(events);
    expect(consumer.stats.duplicates, 'copies published again after the SIGKILLs, absorbed by the inbox').toBeGreaterThan(0);
    summary('amqp-sigkill', {
      events, dispatchers: 4, killed: 2, 'killed-by-ms': killedAt, 'queue-copies': consumer.stats.applied + consumer.stats.duplicates,
      'duplicates-absorbed-by-inbox': consumer.stats.duplicates, applied: outcome.applied, lost: outcome.lost, 'out-of-order': outcome.outOfOrder,
      retries: f.count('retry'), dead: f.count('dead'), 'elapsed-ms': elapsedMs,
    });
  });

  it('broker cut off for 10 s (TCP proxy): messages wait as pending with backoff, none dead, all delivered after it returns', { timeout: 300_000 }, async () => {
    const events = envInt('BROKER_OUTAGE_EVENTS', 1_000);
    const outageMs = envInt('BROKER_OUTAGE_MS', 10_000);
    const { connection, exchange, queue, prefix } = await makeTopology();
    const inbox = await installConsumer(t.db, t.pool);
    const ids = await seedEvents(t.db, events);
    const consumer = await startConsumer(connection, queue, inbox);
    const target = new URL(AMQP_URL);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5672));
    await proxy.open();
    closers.push(() => proxy.cut());
    const viaProxy = new URL(AMQP_URL);
    viaProxy.port = String(proxy.port);

    const publisher = amqpPublisher({ url: viaProxy.toString(), exchange, routingKey: route(prefix), timeout: 1_000, connectTimeout: 1_000, reconnect: { base: 100, cap: 1_000 } });
    closers.push(() => publisher.close());
    const retryDelays: number[] = [];
    const reasons = new Set<string>();
    let dead = 0;
    const dispatcher = track(createDispatcher({
      pool: t.pool, publisher, concurrency: 8, lease: '10s', publishTimeout: 1_500, pollInterval: 100,
      backoff: { base: 100, cap: 3_000 }, logger: null,
    }));
    dispatcher.on('task:retrying', ({ delayMs, error }) => {
      retryDelays.push(delayMs);
      reasons.add(error.message.replace(/^publish of message \d+ .*?: /, '').replace(/\d+ ms/g, 'N ms').slice(0, 120));
    });
    dispatcher.on('task:dead', () => dead++);
    await dispatcher.start();
    await waitUntil(async () => ((await outboxCounts(t.db)).done ?? 0) >= Math.min(100, events / 10), 'the first messages delivered', 60_000);

    await proxy.cut();
    const downAt = Date.now();
    let waitingSeen = 0;
    while (Date.now() - downAt < outageMs) {
      const counts = await outboxCounts(t.db);
      expect(counts.dead ?? 0, 'messages dead during the outage').toBe(0);
      waitingSeen = Math.max(waitingSeen, counts.pending ?? 0);
      await new Promise((r) => setTimeout(r, 250));
    }
    const duringOutage = await outboxCounts(t.db);
    const connectionsBefore = proxy.connections;
    await proxy.open();
    const upAt = Date.now();
    // a message waits at most the backoff cap (3 s) before its next attempt; a lease (10 s) without one more done is a hang
    await waitForCount(async () => (await outboxCounts(t.db)).done ?? 0, events, 'every outbox message done', 10_000, () => outboxCounts(t.db));
    const recoveredMs = Date.now() - upAt;
    await consumerApplied(connection, queue, consumer, events);
    await dispatcher.stop({ timeout: '5s' });
    await consumer.stop();

    const outcome = await expectExactlyOnce(t.db, ids);
    expect(dead).toBe(0);
    expect(retryDelays.length, 'retries during the outage').toBeGreaterThan(0);
    expect(waitingSeen, 'messages waiting as pending during the outage').toBeGreaterThan(0);
    // one new connection after the cut, not one per message
    expect(proxy.connections - connectionsBefore).toBeLessThanOrEqual(2);
    summary('amqp-outage', {
      events, 'outage-ms': outageMs, 'pending-during-outage': waitingSeen, 'done-before-restore': duringOutage.done ?? 0,
      retries: retryDelays.length, 'max-backoff-ms': Math.max(...retryDelays), 'delivered-within-ms-of-restore': recoveredMs,
      'inbox-duplicates': consumer.stats.duplicates, applied: outcome.applied, lost: outcome.lost, dead,
    });
    console.log(`brokers: amqp-outage: retry reasons: ${[...reasons].join(' | ')}`);
  });

  it('classifies: a message no queue is bound for goes dead (returned), a missing exchange is retried until it exists', { timeout: 60_000 }, async () => {
    const { exchange, prefix } = await makeTopology();
    await installConsumer(t.db, t.pool);
    const outbox = createOutbox();
    const routed = route(prefix);
    const missing = `lh-test-missing-${randomUUID().slice(0, 8)}`;
    const publisher = amqpPublisher({
      url: AMQP_URL,
      exchange,
      routingKey: (m) => (m.eventType === 'unbound' ? 'nowhere.at.all' : routed(m)),
      timeout: 2_000,
    });
    const toMissing = amqpPublisher({ url: AMQP_URL, exchange: missing, timeout: 2_000, reconnect: { base: 10, cap: 50 } });
    closers.push(() => publisher.close(), () => toMissing.close());
    const unbound = await outbox.add(t.db, { aggregateType: 'acct', aggregateId: 1, eventType: 'unbound', payload: {} });
    const dispatcher = track(createDispatcher({ pool: t.pool, publisher, eventTypes: ['unbound'], pollInterval: 50, logger: null }));
    const deadEvent = nextEvent(dispatcher, 'task:dead');
    await dispatcher.start();
    const { task, error } = await deadEvent;
    expect(task.id).toBe(unbound);
    expect(error.message).toMatch(/unroutable: 312 NO_ROUTE/);
    await dispatcher.stop({ timeout: '5s' });

    // attempts enough to outlast any wait for the fixer below: the point is retried, not dead
    const id = await outbox.add(t.db, { aggregateType: 'acct', aggregateId: 2, eventType: 'to-missing', payload: {}, maxAttempts: 10_000 });
    const second = track(createDispatcher({ pool: t.pool, publisher: toMissing, eventTypes: ['to-missing'], pollInterval: 50, backoff: { base: 10, cap: 50 }, logger: null }));
    const retried = nextEvent(second, 'task:retrying');
    await second.start();
    expect((await retried).error.message).toMatch(/channel closed before the confirm: .*404.*no exchange/);
    // once the exchange exists (an operator fixed the topology), the same message goes through;
    // listened for first, since it may succeed as soon as the exchange is declared
    const succeeded = nextEvent(second, 'task:succeeded', ({ task: t2 }) => t2.id === id, 30_000);
    const fixer = await connect(AMQP_URL);
    const ch = await fixer.createChannel();
    // The exchange must route from the moment it exists: a publish between its declaration and a
    // queue's binding would come back unroutable and go dead (a CI run hit that window). So the
    // queue is bound first, to an alternate exchange, and the exchange is declared with it.
    const fallback = `${missing}-ae`;
    await ch.assertExchange(fallback, 'fanout', { durable: false, autoDelete: false });
    const { queue: bound } = await ch.assertQueue('', { exclusive: true });
    await ch.bindQueue(bound, fallback, '');
    await ch.assertExchange(missing, 'fanout', { durable: false, autoDelete: false, alternateExchange: fallback });
    expect((await succeeded).task.attempts, 'attempts before the exchange existed, and the one after').toBeGreaterThan(1);
    await second.stop({ timeout: '5s' });
    await ch.deleteExchange(missing);
    await ch.deleteExchange(fallback);
    await fixer.close();
  });
});
