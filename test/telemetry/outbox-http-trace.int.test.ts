// Issue 15: one trace from the request that wrote an outbox event, through the dispatcher's span
// and the publish, to the receiving service's inbox (a real node:http receiver).
import { SpanKind, trace } from '@opentelemetry/api';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createInbox, httpPublisher } from '@leasehold/adapters-http';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { useTestServer } from '../http/http-server.js';
import { useWorkers } from '../workers.js';
import { parentOf, registerTracing } from './otel-sdk.js';

const exporter = registerTracing();
const t = useTestDatabase();
const server = useTestServer();
const track = useWorkers();
const outbox = createOutbox();
const inbox = createInbox();

describe('trace context across the outbox', () => {
  it('the producer span, the publish span and the receiver inbox span share one trace, each the child of the one before', async () => {
    await sql`CREATE TABLE applied (id text)`.execute(t.db);
    server.reset(async (req, res, body) => {
      const { id } = JSON.parse(body) as { id: string };
      await inbox.receive(t.db, id, async (trx) => void (await sql`INSERT INTO applied VALUES (${id})`.execute(trx)), { headers: req.headers });
      res.writeHead(200).end();
    });
    const producer = trace.getTracer('app').startSpan('POST /orders', { kind: SpanKind.SERVER });
    const id = await trace.getTracer('app').startActiveSpan('place order', async (span) => {
      const added = await t.db.transaction().execute((trx) => outbox.add(trx, { aggregateType: 'order', aggregateId: 'o-1', eventType: 'OrderPlaced', payload: { total: 5 } }));
      span.end();
      return added;
    });
    producer.end();
    const stored = await sql<{ headers: Record<string, string> }>`SELECT headers FROM leasehold.outbox WHERE id = ${id}`.execute(t.db);
    const placed = exporter.getFinishedSpans().find((s) => s.name === 'place order')!;
    expect(stored.rows[0]!.headers.traceparent).toContain(placed.spanContext().traceId);

    const d = track(createDispatcher({ pool: t.pool, publisher: httpPublisher({ url: `${server.origin}/hook` }), pollInterval: '1s' }));
    await d.start();
    await expect.poll(async () => (await sql<{ n: string }>`SELECT count(*) AS n FROM applied`.execute(t.db)).rows[0]!.n, { timeout: 15_000 }).toBe('1');
    await d.stop();

    const spans = exporter.getFinishedSpans();
    const publish = spans.find((s) => s.name === 'publish OrderPlaced')!;
    const receive = spans.find((s) => s.name === 'inbox receive')!;
    const dispatch = spans.find((s) => s.name === 'dispatch OrderPlaced')!;
    expect(publish.spanContext().traceId).toBe(placed.spanContext().traceId);
    // the dispatcher's span continues the context stored with the event; the publish is its child
    expect(parentOf(dispatch)).toBe(placed.spanContext().spanId);
    expect(parentOf(publish)).toBe(dispatch.spanContext().spanId);
    expect(dispatch.attributes).toMatchObject({ 'messaging.operation.name': 'dispatch', 'messaging.destination.name': 'OrderPlaced', 'leasehold.table': 'leasehold.outbox', 'leasehold.outcome': 'succeeded' });
    expect(receive.spanContext().traceId).toBe(placed.spanContext().traceId);
    expect(parentOf(receive)).toBe(publish.spanContext().spanId);
    expect(publish.attributes).toMatchObject({ 'messaging.message.id': id, 'messaging.destination.name': 'OrderPlaced' });
    expect(receive.attributes).toMatchObject({ 'messaging.message.id': id, 'leasehold.inbox.applied': true });
  });

  it('an event given its own traceparent keeps it', async () => {
    const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const id = await trace.getTracer('app').startActiveSpan('other', async (span) => {
      const added = await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 'o-2', eventType: 'OrderPlaced', payload: {}, headers: { traceparent: own } });
      span.end();
      return added;
    });
    const stored = await sql<{ headers: Record<string, string> }>`SELECT headers FROM leasehold.outbox WHERE id = ${id}`.execute(t.db);
    expect(stored.rows[0]!.headers.traceparent).toBe(own);
  });
});
