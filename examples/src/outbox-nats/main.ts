// Outbox → JetStream → another service with an inbox. A shop records OrderPlaced and OrderPaid
// in the same transaction as each order (ordered per order); a dispatcher publishes them to a
// JetStream stream with Nats-Msg-Id = the outbox id; billing consumes the stream into its own
// schema through its inbox. The program checks that every order has exactly one paid invoice.
//   npm run outbox-nats -w @leasehold/examples   (DATABASE_URL, or a throwaway PostgreSQL when
//   unset; NATS_URL, default nats://127.0.0.1:4222, a server with JetStream: nats-server -js)
import { randomBytes } from 'node:crypto';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createDispatcher, createOutbox, migrate } from '@leasehold/outbox';
import { jetStreamPublisher } from '@leasehold/adapters-nats';
import { openDatabase } from '../shared/database.js';
import { createPool } from '../shared/pool.js';
import { shutdownSignal } from '../shared/shutdown.js';
import { BILLING_SCHEMA, installBilling, startBilling } from './billing.js';

const SHOP_SCHEMA = 'outbox_nats_shop';
const STREAM = 'OUTBOX_NATS_EXAMPLE';
const SUBJECTS = 'outbox-nats-example.>';
const ORDERS = 50;
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const signal = shutdownSignal();
const database = await openDatabase(signal);
const pool = createPool(database.url, 10);
const nc = await connect({ servers: NATS_URL, name: 'outbox-nats-example' });
let code = 1;
try {
  // the shop's side: its schema with the outbox (in production: its own database)
  await pool.query(`DROP SCHEMA IF EXISTS ${SHOP_SCHEMA} CASCADE`);
  await migrate(pool, { schema: SHOP_SCHEMA });
  await pool.query(`CREATE TABLE ${SHOP_SCHEMA}.app_order (id text PRIMARY KEY, total_cents int NOT NULL)`);
  await installBilling(pool);

  // the stream (file storage, 2 min duplicate window) and billing's durable pull consumer
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(STREAM).catch(() => undefined);
  await jsm.streams.add({ name: STREAM, subjects: [SUBJECTS], duplicate_window: 120e9 });
  await jsm.consumers.add(STREAM, { durable_name: 'billing', ack_policy: AckPolicy.Explicit });
  console.log(`nats: stream ${STREAM} (${SUBJECTS}) on ${NATS_URL}`);

  const billing = await startBilling(pool, await jetstream(nc).consumers.get(STREAM, 'billing'));
  const publisher = jetStreamPublisher({ servers: NATS_URL, subject: (m) => `outbox-nats-example.${m.aggregateType}.${m.eventType}` });
  const dispatcher = createDispatcher({ pool, publisher, schema: SHOP_SCHEMA, pollInterval: '200ms' });
  dispatcher.on('task:dead', ({ task, error }) => console.error(`dispatcher: message ${task.id} dead: ${error.message}`));
  await dispatcher.start();

  // each order and its two events commit together; OrderPlaced and OrderPaid are ordered per order
  const outbox = createOutbox({ schema: SHOP_SCHEMA, orderedEventTypes: ['OrderPlaced', 'OrderPaid'] });
  for (let i = 1; i <= ORDERS; i++) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const id = `o-${i}`;
      const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
      await client.query(`INSERT INTO ${SHOP_SCHEMA}.app_order VALUES ($1, $2)`, [id, i * 100]);
      await outbox.add(client, { aggregateType: 'order', aggregateId: id, eventType: 'OrderPlaced', payload: { totalCents: i * 100 }, headers: { traceparent } });
      await outbox.add(client, { aggregateType: 'order', aggregateId: id, eventType: 'OrderPaid', payload: { totalCents: i * 100 }, headers: { traceparent } });
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }
  console.log(`shop: ${ORDERS} orders placed and paid, ${ORDERS * 2} events in the outbox`);

  const deadline = Date.now() + 60_000;
  while (billing.stats.applied < ORDERS * 2 && Date.now() < deadline && !signal.aborted) await new Promise((r) => setTimeout(r, 100));
  // the publisher holds a connection: close it once the dispatcher has stopped
  await dispatcher.stop({ timeout: '10s' });
  await publisher.close();
  await billing.stop();
  const info = await jsm.streams.info(STREAM);
  await jsm.streams.delete(STREAM);
  code = (await check(info.state.messages, billing.stats)) ? 0 : 1;
} catch (error) {
  code = signal.aborted ? 130 : 1;
  if (!signal.aborted) console.error('example failed:', error);
} finally {
  await nc.close();
  await pool.end();
  await database.close();
}
process.exit(code);

/** One paid invoice per order, every event once in the stream and applied once. */
async function check(streamMessages: number, stats: { applied: number; duplicates: number }): Promise<boolean> {
  const { rows } = await pool.query<{ invoices: string; paid: string; traced: string; received: string }>(`
    SELECT (SELECT count(*) FROM ${BILLING_SCHEMA}.invoice) AS invoices,
           (SELECT count(*) FROM ${BILLING_SCHEMA}.invoice WHERE status = 'paid') AS paid,
           (SELECT count(*) FROM ${BILLING_SCHEMA}.invoice WHERE trace IS NOT NULL) AS traced,
           (SELECT count(*) FROM ${BILLING_SCHEMA}.inbox) AS received`);
  const r = rows[0]!;
  console.log(`\nstream messages: ${streamMessages}\nbilling: applied ${stats.applied}, duplicates absorbed ${stats.duplicates}, inbox records ${r.received}`);
  console.log(`invoices: ${r.invoices}, paid: ${r.paid}, with the producer's trace context: ${r.traced}`);
  const ok = Number(r.invoices) === ORDERS && Number(r.paid) === ORDERS && Number(r.traced) === ORDERS && Number(r.received) === ORDERS * 2 && streamMessages === ORDERS * 2;
  console.log(ok ? `OK: ${ORDERS} orders, each with one paid invoice; every event applied exactly once, in order.` : 'FAILED: see above');
  return ok;
}
