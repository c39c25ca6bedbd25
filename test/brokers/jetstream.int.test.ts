// Outbox → dispatchers → jetStreamPublisher → JetStream → consumeJetStream (inbox) → the consumer's
// ledger, against real servers: the machine's JetStream (127.0.0.1:4222, or NATS_URL) with 4
// dispatcher processes of which 2 are SIGKILLed mid-run; a private 3-node cluster whose stream
// leader is SIGKILLed mid-run and restarted; a private server that is down for 10 s. Each ends
// with every event applied exactly once, none lost, none dead, ordered aggregates in order,
// and prints `brokers: <scenario>: …` with the counts.
//
// Sizes: BROKER_EVENTS (default 10000) for the SIGKILL run, BROKER_CLUSTER_EVENTS (3000) for the
// cluster, BROKER_OUTAGE_EVENTS (1000) and BROKER_OUTAGE_MS (10000) for the outage.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createDispatcher, createOutbox, type OutboxMessage } from '@leasehold/outbox';
import { consumeJetStream, jetStreamPublisher, type InboxConsumer, type JetStreamPublisher } from '@leasehold/adapters-nats';
import type { Inbox } from '@leasehold/adapters-http';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { BrokerFleet } from './broker-fleet.js';
import { NatsNodes } from './nats-servers.js';
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

const t = useTestDatabase();
const track = useWorkers();
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const SEC = 1e9; // JetStream durations are nanoseconds

let fleet: BrokerFleet | undefined;
let nodes: NatsNodes | undefined;
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await fleet?.destroy();
  fleet = undefined;
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  await nodes?.destroy();
  nodes = undefined;
});

/** A stream for this run, its subjects under a prefix of their own, and a durable pull consumer. */
async function makeStream(jsm: JetStreamManager, replicas = 1): Promise<{ stream: string; prefix: string }> {
  const run = randomUUID().slice(0, 8);
  const stream = `LH_TEST_${run}`;
  const prefix = `lhtest${run}`;
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`], num_replicas: replicas, duplicate_window: 120 * SEC });
  await jsm.consumers.add(stream, { durable_name: 'ledger', ack_policy: AckPolicy.Explicit, ack_wait: 5 * SEC, max_ack_pending: 2_000 });
  return { stream, prefix };
}

/** Waits for the consumer to apply `events`; when it stalls, says what the ledger consumer holds. */
async function consumerApplied(jsm: JetStreamManager, stream: string, consumer: InboxConsumer, events: number): Promise<void> {
  await waitForCount(() => ledgerCount(t.db), events, 'the consumer applying every event', CONSUMER_STALL_MS, async () => {
    const info = await jsm.consumers.info(stream, 'ledger');
    return { stats: consumer.stats, pending: info.num_pending, ackPending: info.num_ack_pending, redelivered: info.num_redelivered, waiting: info.num_waiting };
  });
}

async function natsConnection(servers: string | string[]): Promise<NatsConnection> {
  const nc = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  closers.push(() => nc.close());
  return nc;
}

async function startConsumer(nc: NatsConnection, stream: string, inbox: Inbox): Promise<InboxConsumer> {
  const consumer = await jetstream(nc).consumers.get(stream, 'ledger');
  const running = await consumeJetStream({ consumer, db: t.pool, inbox, concurrency: 8, retryDelay: 200, apply: (event, client) => applyToLedger(client, event) });
  closers.push(() => running.stop({ timeout: '10s' }));
  return running;
}

const route = (prefix: string) => (m: OutboxMessage) => `${prefix}.${m.aggregateType}.${m.eventType}`;

async function streamMessages(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

describe('JetStream: outbox → jetStreamPublisher → stream → consumeJetStream (inbox)', () => {
  it('machine JetStream: 4 dispatcher processes, 2 SIGKILLed mid-run: every event applied once, duplicates dropped by the stream', { timeout: 300_000 }, async () => {
    const events = envInt('BROKER_EVENTS', 10_000);
    const nc = await natsConnection(NATS_URL);
    const jsm = await jetstreamManager(nc);
    const { stream, prefix } = await makeStream(jsm);
    closers.push(() => jsm.streams.delete(stream));
    const inbox = await installConsumer(t.db, t.pool);
    const ids = await seedEvents(t.db, events);
    const consumer = await startConsumer(nc, stream, inbox);

    const f = (fleet = new BrokerFleet(t.url));
    const base = { broker: 'nats', target: [NATS_URL], prefix, leaseMs: 3_000, publishTimeoutMs: 300, brokerTimeoutMs: 250, concurrency: 8 } as const;
    // the victims hold each acknowledged message 30 ms before reporting success, so a SIGKILL
    // always finds some that the stream has but the outbox does not know were delivered
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
    await consumerApplied(jsm, stream, consumer, events);
    const elapsedMs = Date.now() - started;
    await f.stopAll();
    await consumer.stop();

    const stored = await streamMessages(jsm, stream);
    const duplicates = f.count('dup');
    const outcome = await expectExactlyOnce(t.db, ids);
    expect(f.crashes()).toEqual([]);
    expect(f.count('dead')).toBe(0);
    // the stream stored each message once: every copy published again was dropped by Nats-Msg-Id
    expect(stored).toBe(events);
    expect(duplicates, 'PubAcks with duplicate: true after the SIGKILLs').toBeGreaterThan(0);
    expect(consumer.stats).toMatchObject({ applied: events, rejected: 0 });
    summary('jetstream-sigkill', {
      events, dispatchers: 4, killed: 2, 'killed-by-ms': killedAt, 'stream-messages': stored, 'duplicates-dropped-by-stream': duplicates,
      'inbox-duplicates': consumer.stats.duplicates, applied: outcome.applied, lost: outcome.lost, 'out-of-order': outcome.outOfOrder,
      retries: f.count('retry'), dead: f.count('dead'), 'elapsed-ms': elapsedMs,
    });
  });

  it('3-node cluster, stream with 3 replicas: its leader SIGKILLed mid-run and restarted; nothing lost or applied twice, dispatch resumes in bound', { timeout: 300_000 }, async () => {
    const events = envInt('BROKER_CLUSTER_EVENTS', 3_000);
    nodes = await NatsNodes.cluster(3);
    const nc = await natsConnection(nodes.urls);
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    const { stream, prefix } = await makeStream(jsm, 3);
    const inbox = await installConsumer(t.db, t.pool);
    const ids = await seedEvents(t.db, events);
    const consumer = await startConsumer(nc, stream, inbox);

    // the client timeouts the resume bound is derived from
    const brokerTimeoutMs = 1_000;
    const backoffCapMs = 2_000;
    const reconnectWaitMs = 250;
    const pollMs = 100;
    const publishTimeoutMs = 1_500;
    const leaseMs = 6_000;
    const successes: number[] = [];
    let duplicates = 0;
    const publisher: JetStreamPublisher = jetStreamPublisher({
      servers: nodes.urls, subject: route(prefix), timeout: brokerTimeoutMs, connectOptions: { reconnectTimeWait: reconnectWaitMs },
      onPublished: ({ duplicate }) => {
        successes.push(Date.now());
        if (duplicate) duplicates++;
      },
    });
    closers.push(() => publisher.close());
    let retries = 0;
    let dead = 0;
    const errors = new Map<string, number>();
    const dispatchers = [1, 2].map((i) => {
      const d = track(createDispatcher({
        pool: t.pool, publisher, owner: `cluster-${i}`, concurrency: 8, lease: leaseMs, publishTimeout: publishTimeoutMs,
        pollInterval: pollMs, backoff: { base: 100, cap: backoffCapMs }, logger: null,
      }));
      d.on('task:retrying', ({ error }) => {
        retries++;
        const kind = error.message.replace(/message \d+/, 'message N').replace(/\d+ ms/g, 'N ms');
        errors.set(kind, (errors.get(kind) ?? 0) + 1);
      });
      d.on('task:dead', () => dead++);
      return d;
    });
    await Promise.all(dispatchers.map((d) => d.start()));
    const done = async () => (await outboxCounts(t.db)).done ?? 0;
    await waitForCount(done, events * 0.3, '30% delivered', 3 * leaseMs);

    const leader = (await jsm.streams.info(stream)).cluster?.leader ?? '';
    expect(leader).toMatch(/^n\d$/);
    const survivors = nodes.nodes.filter((n) => n.name !== leader);
    const killedAt = Date.now();
    await nodes.node(leader).stop('SIGKILL');
    // The election is the server's business: a follower waits 4–9 s (nats-server raft.go,
    // min/maxElectionTimeoutDefault) without a heartbeat before it campaigns. It is watched
    // on the survivors' monitoring ports, which answer without a leader; the new leader names
    // itself at once, so electedAt trails the election by at most one 50 ms poll.
    let newLeader = '';
    await waitUntil(async () => {
      for (const n of survivors) {
        const view = await n.streamView(stream).catch(() => undefined);
        if (view && view.leader !== '' && view.leader !== leader) newLeader = view.leader;
      }
      return newLeader !== '';
    }, 'the survivors to elect a new stream leader', 60_000);
    const electedAt = Date.now();
    // From then on the bound is the client's, from the options above: an attempt in flight
    // ends within the dispatcher's publishTimeout (the publisher's own waits share its
    // brokerTimeout; a no-responders loop asks again every 250 ms and gets through), the
    // message then waits at most the backoff cap and the next poll before a dispatcher claims
    // it again, and that publish is acknowledged within brokerTimeout or fails. A publisher
    // connected to the dead node is elsewhere by then: it reconnects after reconnectTimeWait
    // (+ the client's 100 ms jitter), well within the 4 s before any follower campaigns.
    const resumeBoundMs = publishTimeoutMs + backoffCapMs + pollMs + brokerTimeoutMs;
    const resumed = () => successes.find((at) => at >= electedAt);
    await waitUntil(() => resumed() !== undefined, 'a publish acknowledged by the new leader', 60_000).catch((error: unknown) => {
      console.log('[cluster] retry errors since the start:', errors);
      throw error;
    });
    const resumeMs = resumed()! - electedAt;
    expect(resumeMs, `dispatch resumed ${resumeMs} ms after the new leader was seen (bound ${resumeBoundMs} ms)`).toBeLessThanOrEqual(resumeBoundMs);

    // the old leader comes back while dispatch goes on, and catches up as a follower
    const doneAtRestart = await done();
    expect(doneAtRestart, 'messages done when the old leader restarts').toBeLessThan(events);
    nodes.node(leader).start();
    await nodes.node(leader).ready(60_000);
    await waitForCount(done, events, 'every outbox message done', 3 * leaseMs, async () => ({
      retryErrors: Object.fromEntries(errors), outbox: await outboxCounts(t.db), successesAfterKill: successes.filter((at) => at > killedAt).length,
    }));
    // every replica, the restarted one too, holds each message once
    const replicaMessages = async () => Promise.all(nodes!.nodes.map(async (n) => (await n.streamView(stream).catch(() => undefined))?.messages ?? -1));
    await waitUntil(async () => (await replicaMessages()).every((m) => m === events), 'all three replicas to hold every message', 60_000);
    await consumerApplied(jsm, stream, consumer, events);
    await Promise.all(dispatchers.map((d) => d.stop({ timeout: '5s' })));
    await consumer.stop();

    const stored = await streamMessages(jsm, stream);
    const outcome = await expectExactlyOnce(t.db, ids);
    expect(dead).toBe(0);
    expect(stored).toBe(events);
    summary('jetstream-cluster-leader-killed', {
      events, replicas: 3, 'killed-leader': leader, 'new-leader': newLeader, 'election-ms': electedAt - killedAt, 'resume-after-election-ms': resumeMs,
      'resume-bound-ms': resumeBoundMs, 'done-at-restart': doneAtRestart, 'replica-messages': (await replicaMessages()).join('/'),
      'stream-messages': stored, 'duplicates-dropped-by-stream': duplicates, 'inbox-duplicates': consumer.stats.duplicates,
      applied: outcome.applied, lost: outcome.lost, 'out-of-order': outcome.outOfOrder, retries, dead,
    });
  });

  it('private server down for 10 s: messages wait as pending with backoff, none dead, all delivered once it is back', { timeout: 300_000 }, async () => {
    const events = envInt('BROKER_OUTAGE_EVENTS', 1_000);
    const outageMs = envInt('BROKER_OUTAGE_MS', 10_000);
    nodes = await NatsNodes.single();
    const node = nodes.nodes[0]!;
    const nc = await natsConnection(node.url);
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    const { stream, prefix } = await makeStream(jsm);
    const inbox = await installConsumer(t.db, t.pool);
    const ids = await seedEvents(t.db, events);
    const consumer = await startConsumer(nc, stream, inbox);

    const publisher = jetStreamPublisher({ servers: node.url, subject: route(prefix), timeout: 1_000 });
    closers.push(() => publisher.close());
    const retryDelays: number[] = [];
    let dead = 0;
    const dispatcher = track(createDispatcher({
      pool: t.pool, publisher, concurrency: 8, lease: '10s', publishTimeout: 1_500, pollInterval: 100,
      backoff: { base: 100, cap: 3_000 }, logger: null,
    }));
    dispatcher.on('task:retrying', ({ delayMs }) => retryDelays.push(delayMs));
    dispatcher.on('task:dead', () => dead++);
    // slow enough that the outage starts mid-run: the publisher holds each message 5 ms
    await dispatcher.start();
    await waitUntil(async () => ((await outboxCounts(t.db)).done ?? 0) >= Math.min(100, events / 10), 'the first messages delivered', 60_000);

    await node.stop('SIGTERM');
    const downAt = Date.now();
    let waitingSeen = 0;
    while (Date.now() - downAt < outageMs) {
      const counts = await outboxCounts(t.db);
      expect(counts.dead ?? 0, 'messages dead during the outage').toBe(0);
      waitingSeen = Math.max(waitingSeen, counts.pending ?? 0);
      await new Promise((r) => setTimeout(r, 250));
    }
    const duringOutage = await outboxCounts(t.db);
    node.start();
    await node.ready();
    const upAt = Date.now();
    // a message waits at most the backoff cap (3 s) before its next attempt; a lease (10 s) without one more done is a hang
    await waitForCount(async () => (await outboxCounts(t.db)).done ?? 0, events, 'every outbox message done', 10_000, () => outboxCounts(t.db));
    const recoveredMs = Date.now() - upAt;
    await consumerApplied(jsm, stream, consumer, events);
    await dispatcher.stop({ timeout: '5s' });
    await consumer.stop();

    const outcome = await expectExactlyOnce(t.db, ids);
    expect(dead).toBe(0);
    expect(retryDelays.length, 'retries during the outage').toBeGreaterThan(0);
    expect(waitingSeen, 'messages waiting as pending during the outage').toBeGreaterThan(0);
    expect(await streamMessages(jsm, stream)).toBe(events);
    summary('jetstream-outage', {
      events, 'outage-ms': outageMs, 'pending-during-outage': waitingSeen, 'done-before-restart': duringOutage.done ?? 0,
      retries: retryDelays.length, 'max-backoff-ms': Math.max(...retryDelays), 'delivered-within-ms-of-restart': recoveredMs,
      applied: outcome.applied, lost: outcome.lost, dead,
    });
  });
});

describe('JetStream: failures classified against a real server', () => {
  it('a subject no stream captures: retried by default, dead at once with streamMissing permanent; another stream than expected and a Nats-* header: dead', { timeout: 60_000 }, async () => {
    const nc = await natsConnection(NATS_URL);
    const jsm = await jetstreamManager(nc);
    const { stream, prefix } = await makeStream(jsm);
    closers.push(() => jsm.streams.delete(stream));
    await installConsumer(t.db, t.pool);
    const outbox = createOutbox();
    const add = (eventType: string, headers: Record<string, string> = {}) =>
      outbox.add(t.db, { aggregateType: 'acct', aggregateId: 1, eventType, payload: {}, headers });
    const subject = (m: OutboxMessage) => (m.eventType === 'nowhere' ? `lhtest-nostream-${prefix}.x` : `${prefix}.${m.eventType}`);
    const run = async (publisherOptions: Parameters<typeof jetStreamPublisher>[0], eventType: string, event: 'task:dead' | 'task:retrying') => {
      const publisher = jetStreamPublisher(publisherOptions);
      const d = track(createDispatcher({ pool: t.pool, publisher, eventTypes: [eventType], pollInterval: 50, backoff: { base: 10, cap: 50 }, logger: null }));
      const seen = nextEvent(d, event);
      await d.start();
      const { error } = await seen;
      await d.stop({ timeout: '5s' });
      await publisher.close();
      return error.message;
    };
    await add('nowhere');
    expect(await run({ servers: NATS_URL, subject }, 'nowhere', 'task:retrying')).toMatch(/no stream captures subject/);
    expect(await run({ servers: NATS_URL, subject, streamMissing: 'permanent' }, 'nowhere', 'task:dead')).toMatch(/no stream captures subject/);
    await add('expected');
    expect(await run({ servers: NATS_URL, subject, expectStream: 'SOME_OTHER' }, 'expected', 'task:dead')).toMatch(/10060/);
    await add('rollup', { 'Nats-Rollup': 'sub' });
    expect(await run({ servers: NATS_URL, subject }, 'rollup', 'task:dead')).toMatch(/header `Nats-Rollup` is reserved/);
  });
});
