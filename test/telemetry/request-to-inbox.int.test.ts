// Issue 15: one trace from an HTTP request that enqueues a task, through the task's handler and a
// workflow step of it, which records an outbox event, through the dispatcher's publish, to the
// receiving service's inbox — two real node:http servers, the SDK's in-memory span exporter.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInbox, httpPublisher } from '@leasehold/adapters-http';
import { createWorker, defineTask, enqueue } from '@leasehold/core';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { useTestServer } from '../http/http-server.js';
import { useWorkers } from '../workers.js';
import { parentOf, registerTracing } from './otel-sdk.js';

const exporter = registerTracing();
const t = useTestDatabase();
const receiver = useTestServer();
const track = useWorkers();
const outbox = createOutbox();
const inbox = createInbox();
const tracer = trace.getTracer('app');

// The order service: POST /orders enqueues a task in the request's transaction, inside the
// request's server span (what an HTTP instrumentation would start, continuing the caller's trace).
let app: Server;
let appOrigin = '';
const placeOrder = defineTask<{ orderId: string }>('place-order', {
  // a database step of the workflow records the event for the billing service: the outbox keeps
  // the step span's context
  handler: async ({ orderId }, ctx) =>
    void (await ctx.dbStep('record-event', t.db, (trx) => outbox.add(trx, { aggregateType: 'order', aggregateId: orderId, eventType: 'OrderPlaced', payload: { orderId } }))),
});

beforeAll(async () => {
  app = createServer((req: IncomingMessage, res) => {
    const caller = propagation.extract(context.active(), req.headers);
    void tracer.startActiveSpan(`${req.method} /orders`, { kind: SpanKind.SERVER }, caller, async (span) => {
      try {
        await t.db.transaction().execute((trx) => enqueue(trx, placeOrder, { orderId: 'o-42' }));
        res.writeHead(202).end();
      } finally {
        span.end();
      }
    });
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  appOrigin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => app.close(() => resolve())));

describe('one trace from a request to the receiving inbox', () => {
  it('request → process place-order → step record-event → dispatch → publish → inbox receive, each span the child of the one before', async () => {
    await sql`CREATE TABLE billed (order_id text)`.execute(t.db);
    receiver.reset(async (req, res, body) => {
      const { id, data } = JSON.parse(body) as { id: string; data: { orderId: string } };
      await inbox.receive(t.db, id, async (trx) => void (await sql`INSERT INTO billed VALUES (${data.orderId})`.execute(trx)), { headers: req.headers });
      res.writeHead(200).end();
    });

    // the caller: a client span whose traceparent travels with the request
    const client = tracer.startSpan('POST order', { kind: SpanKind.CLIENT });
    const headers: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), client), headers);
    expect((await fetch(`${appOrigin}/orders`, { method: 'POST', headers })).status).toBe(202);
    client.end();

    const worker = track(createWorker({ pool: t.pool, tasks: [placeOrder], pollInterval: '100ms' }));
    const dispatcher = track(createDispatcher({ pool: t.pool, publisher: httpPublisher({ url: `${receiver.origin}/billing` }), pollInterval: '100ms' }));
    await worker.start();
    await dispatcher.start();
    await expect.poll(async () => (await sql<{ n: string }>`SELECT count(*) AS n FROM billed`.execute(t.db)).rows[0]!.n, { timeout: 15_000 }).toBe('1');
    await worker.stop();
    await dispatcher.stop();

    const named = (name: string): ReadableSpan => {
      const found = exporter.getFinishedSpans().filter((s) => s.name === name);
      expect(found.map((s) => s.name), name).toEqual([name]);
      return found[0]!;
    };
    const chain = ['POST order', 'POST /orders', 'process place-order', 'step record-event', 'dispatch OrderPlaced', 'publish OrderPlaced', 'inbox receive'].map(named);
    const traceId = chain[0]!.spanContext().traceId;
    for (let i = 1; i < chain.length; i++) {
      expect(chain[i]!.spanContext().traceId, chain[i]!.name).toBe(traceId);
      expect(parentOf(chain[i]!), `${chain[i]!.name}'s parent`).toBe(chain[i - 1]!.spanContext().spanId);
    }
    expect(chain.map((s) => s.kind)).toEqual([SpanKind.CLIENT, SpanKind.SERVER, SpanKind.CONSUMER, SpanKind.INTERNAL, SpanKind.CONSUMER, SpanKind.PRODUCER, SpanKind.CONSUMER]);
    expect(named('process place-order').attributes).toMatchObject({ 'leasehold.outcome': 'succeeded', 'messaging.destination.name': 'place-order' });
    expect(named('inbox receive').attributes).toMatchObject({ 'leasehold.inbox.applied': true });
  });
});
