// The consuming service: billing keeps an invoice per order in its own schema. Each JetStream
// message is applied through billing's inbox (its Nats-Msg-Id recorded in the same transaction as
// the invoice change) and acked only after that transaction commits.
import type { Consumer } from '@nats-io/jetstream';
import { consumeJetStream, type InboxConsumer } from '@leasehold/adapters-nats';
import { createInbox, migrateInbox } from '@leasehold/adapters-http';
import type pg from 'pg';

export const BILLING_SCHEMA = 'outbox_nats_billing';

/** Billing's tables: its inbox, and invoices (no unique key on purpose: only the inbox prevents doubles). */
export async function installBilling(pool: pg.Pool): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS ${BILLING_SCHEMA} CASCADE`);
  await pool.query(`CREATE SCHEMA ${BILLING_SCHEMA}`);
  await migrateInbox(pool, { schema: BILLING_SCHEMA });
  await pool.query(`CREATE TABLE ${BILLING_SCHEMA}.invoice (order_id text NOT NULL, total_cents int NOT NULL, status text NOT NULL, trace text)`);
}

/** Starts billing's consumer: OrderPlaced opens an invoice, OrderPaid marks it paid. */
export function startBilling(pool: pg.Pool, consumer: Consumer): Promise<InboxConsumer> {
  return consumeJetStream({
    consumer,
    db: pool,
    inbox: createInbox({ schema: BILLING_SCHEMA }),
    concurrency: 4,
    onError: (error, event) => console.error(`billing: ${event?.eventType ?? 'message'} ${event?.id ?? ''} failed: ${error.message}`),
    apply: async (event, client) => {
      const { totalCents } = event.payload as { totalCents: number };
      if (event.eventType === 'OrderPlaced') {
        await client.query(`INSERT INTO ${BILLING_SCHEMA}.invoice VALUES ($1, $2, 'open', $3)`, [event.key, totalCents, event.headers.traceparent ?? null]);
      } else if (event.eventType === 'OrderPaid') {
        const { rowCount } = (await client.query(`UPDATE ${BILLING_SCHEMA}.invoice SET status = 'paid' WHERE order_id = $1 AND status = 'open'`, [
          event.key,
        ])) as { rowCount: number };
        // events of one order arrive in order: a payment never finds its invoice missing
        if (rowCount !== 1) throw new Error(`OrderPaid for order ${event.key} found no open invoice`);
      }
    },
  });
}
