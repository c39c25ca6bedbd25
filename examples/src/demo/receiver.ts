import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, WebhookVerificationError, type Inbox, type WebhookEnvelope } from '@leasehold/adapters-http';
import type { Kysely } from 'kysely';
import type { DemoDatabase } from './tables.js';
import { readBody } from '../shared/read-body.js';

/** What the receiver saw. */
export interface ReceiverCounters {
  requests: number;
  /** Answered 503 during the injected outage. */
  unavailable: number;
  /** Verified deliveries applied for the first time. */
  applied: number;
  /** Verified deliveries the inbox recognised as already applied. */
  duplicates: number;
  /** Deliveries refused by signature verification (there should be none). */
  rejected: number;
  /** `OrderPaid` applied before its order's `OrderPlaced` (ordering is per aggregate; there should be none). */
  outOfOrder: number;
  /** Each duplicate, with the worker that redelivered it. */
  duplicateLog: Array<{ eventId: string; worker: string }>;
}

/** A running receiver. */
export interface Receiver {
  readonly url: string;
  readonly counters: ReceiverCounters;
  close(): Promise<void>;
}

/**
 * The receiving service: a webhook endpoint on `node:http` that verifies the Standard Webhooks
 * signature, then applies the event through the inbox — record the message id and apply the
 * change in one transaction, so a redelivered event is recognised and not applied twice. For
 * its first `downForRequests` requests it answers 503, as a receiver in maintenance would.
 */
export async function startReceiver(options: {
  db: Kysely<DemoDatabase>;
  inbox: Inbox;
  secret: string;
  downForRequests: number;
}): Promise<Receiver> {
  const counters: ReceiverCounters = { requests: 0, unavailable: 0, applied: 0, duplicates: 0, rejected: 0, outOfOrder: 0, duplicateLog: [] };
  const server = createServer((req, res) => {
    handle(options, counters, req, res).catch((error: unknown) => {
      res.writeHead(500).end(String((error as Error).message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks/orders`,
    counters,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function handle(
  { db, inbox, secret, downForRequests }: { db: Kysely<DemoDatabase>; inbox: Inbox; secret: string; downForRequests: number },
  counters: ReceiverCounters,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const rawBody = await readBody(req);
  if (counters.requests++ < downForRequests) {
    counters.unavailable++;
    res.writeHead(503, { 'retry-after': '1' }).end('down for maintenance');
    return;
  }
  let id: string;
  try {
    ({ id } = verifyWebhook(req.headers, rawBody, secret));
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    counters.rejected++;
    res.writeHead(401).end(error.reason);
    return;
  }
  const event = JSON.parse(rawBody) as WebhookEnvelope;
  const worker = String(req.headers['x-demo-worker'] ?? '?');
  const result = await inbox.receive(db, id, async (trx) => {
    const orderId = event.key;
    if (event.type === 'OrderPaid') {
      const placed = await trx
        .selectFrom('leasehold_demo_receiver.applied')
        .select('event_id')
        .where('order_id', '=', orderId)
        .where('event_type', '=', 'OrderPlaced')
        .executeTakeFirst();
      if (!placed) counters.outOfOrder++;
    }
    await trx.insertInto('leasehold_demo_receiver.applied').values({ event_id: id, order_id: orderId, event_type: event.type, worker }).execute();
  });
  if (result.applied) counters.applied++;
  else {
    counters.duplicates++;
    counters.duplicateLog.push({ eventId: id, worker });
  }
  res.writeHead(200, { 'content-type': 'text/plain' }).end(result.applied ? 'applied' : 'duplicate, already applied');
}
