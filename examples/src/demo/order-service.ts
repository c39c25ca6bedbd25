import { setTimeout as sleep } from 'node:timers/promises';
import type { Outbox } from '@leasehold/outbox';
import type { Kysely } from 'kysely';
import type { DemoDatabase } from './tables.js';

/** Progress of the order service, read by the progress line. */
export interface OrderServiceProgress {
  placed: number;
  paid: number;
  finished: boolean;
}

/**
 * The order service in miniature, with `clients` customers ordering at the same time. Each
 * order is written with its `OrderPlaced` event in ONE transaction; paying it a little later
 * updates the order and adds `OrderPaid`, again in one transaction. A rollback leaves neither
 * the change nor the event; a commit makes the event deliverable. The dispatchers deliver
 * while orders keep arriving.
 */
export async function runOrderService(
  db: Kysely<DemoDatabase>,
  outbox: Outbox,
  options: { orders: number; clients: number },
  progress: OrderServiceProgress,
  signal: AbortSignal,
): Promise<void> {
  let next = 1;
  const client = async () => {
    const unpaid: string[] = [];
    while (!signal.aborted && next <= options.orders) {
      const i = next++;
      unpaid.push(await placeOrder(db, outbox, `customer-${i % 17}`, 1_000 + ((i * 37) % 9_000)));
      progress.placed++;
      // pay orders a few places behind, so both kinds of event are in flight at once
      while (unpaid.length > (next > options.orders ? 0 : 3) && !signal.aborted) {
        await payOrder(db, outbox, unpaid.shift()!);
        progress.paid++;
      }
      if (i % 10 === 0) await sleep(20);
    }
  };
  try {
    await Promise.all(Array.from({ length: options.clients }, client));
  } finally {
    progress.finished = true;
  }
}

async function placeOrder(db: Kysely<DemoDatabase>, outbox: Outbox, customer: string, totalCents: number): Promise<string> {
  return db.transaction().execute(async (trx) => {
    const { id } = await trx
      .insertInto('leasehold_demo.orders')
      .values({ customer, total_cents: totalCents, status: 'placed' })
      .returning('id')
      .executeTakeFirstOrThrow();
    await outbox.add(trx, { aggregateType: 'order', aggregateId: id, eventType: 'OrderPlaced', payload: { orderId: id, customer, totalCents } });
    return String(id);
  });
}

async function payOrder(db: Kysely<DemoDatabase>, outbox: Outbox, orderId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('leasehold_demo.orders').set({ status: 'paid' }).where('id', '=', orderId).execute();
    await outbox.add(trx, { aggregateType: 'order', aggregateId: orderId, eventType: 'OrderPaid', payload: { orderId } });
  });
}
