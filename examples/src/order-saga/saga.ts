import { ChildTaskError, defineSignal, defineTask, PermanentError, type TaskContext } from '@leasehold/core';
import { CardDeclinedError, type FakePayments } from './payments.js';

export interface Order {
  orderId: string;
  sku: string;
  qty: number;
  amountCents: number;
  card: string;
  address: string;
  /** How long a human has to approve it (a Duration: '1s', '10m'). */
  approvalWindow: string;
}

/** What the workflow returns: stored with the task, read by `waitForResult`. */
export type SagaResult =
  | { outcome: 'shipped'; chargeId: string; approvedBy: string; trackingNo: string }
  | { outcome: 'compensated'; reason: string; refunded: boolean };

/** The address the carrier refuses, so that one order's `ship` child goes dead. */
export const UNSHIPPABLE = 'nowhere';

/** The human's go-ahead; `sendSignal` on one side, `ctx.waitForSignal` on the other, one payload type. */
export const approved = defineSignal<{ by: string }>('approved');

/** The order workflow and its child task, wired to a payment service and the app's schema. */
export function defineOrderTasks(payments: FakePayments, schema: string) {
  const ship = defineTask('ship', {
    handler: async ({ orderId, address }: { orderId: string; address: string }) => {
      // the carrier will refuse this address on every retry: fail for good, at once
      if (address === UNSHIPPABLE) throw new PermanentError(`carrier refused address "${address}"`);
      return { trackingNo: `TRK-${orderId}` };
    },
  });

  const orderSaga = defineTask('order-saga', {
    maxAttempts: 5,
    backoff: { base: '50ms', cap: '200ms' },
    // Every run starts at the top: recorded steps return what they recorded without running, so
    // a retry or a wake-up resumes where the last run stopped.
    handler: async (order: Order, ctx: TaskContext): Promise<SagaResult> => {
      // exactly once: the row commits together with the step's record, or neither does
      await ctx.dbStep('reserve', async (client) => {
        await client.query(`INSERT INTO ${schema}.stock_reservation (order_id, sku, qty, task_id) VALUES ($1, $2, $3, $4)`, [
          order.orderId, order.sku, order.qty, ctx.task.id,
        ]);
      });
      // stable across runs of this task, so the provider charges once however often the step runs
      const chargeKey = `${ctx.task.id}:charge`;
      let charged = false;
      try {
        const { chargeId } = await ctx.step('charge', async () => {
          const charge = await payments.charge(chargeKey, order.orderId, order.amountCents, order.card).catch((error: unknown) => {
            // a declined card stays declined: no retry, compensate instead
            throw error instanceof CardDeclinedError ? new PermanentError(error.message, { cause: error }) : error;
          });
          // The reply of the first attempt is "lost" after the provider charged: the step is not
          // recorded, the task retries, and the second call gets the first charge back.
          if (ctx.task.attempts === 1) throw new Error('payment reply lost (simulated)');
          return charge;
        });
        charged = true;
        // parks (no worker slot held) until the signal comes or the window closes
        const approval = await ctx.waitForSignal(approved, { timeout: order.approvalWindow });
        if (approval.timedOut) throw new PermanentError(`not approved within ${order.approvalWindow}`);
        await ctx.sleep('cool-off', '1s'); // durable: a restart does not shorten or repeat it
        const children = await ctx.spawn('ship', ship, [{ payload: { orderId: order.orderId, address: order.address } }]);
        const [shipment] = await ctx.waitForChildren(children);
        return { outcome: 'shipped', chargeId, approvedBy: approval.payload.by, trackingNo: shipment!.trackingNo };
      } catch (error) {
        // Compensate only what no retry can fix. Anything else goes through to the worker: a
        // SuspendedError (the run parked), a lost lease, or a transient error to retry.
        if (!(error instanceof PermanentError || error instanceof ChildTaskError)) throw error;
        // steps too: a crash half-way through compensating resumes it, and the refund is idempotent
        const refund = charged ? await ctx.step('refund', () => payments.refund(chargeKey)) : { refunded: false };
        await ctx.dbStep('release', async (client) => {
          await client.query(`UPDATE ${schema}.stock_reservation SET released_at = now() WHERE order_id = $1`, [order.orderId]);
        });
        // a child's stored error carries its stack: its first line is the reason
        const reason = error instanceof ChildTaskError ? `shipping failed: ${error.failures[0]?.error?.split('\n', 1)[0]}` : error.message;
        return { outcome: 'compensated', reason, refunded: refund.refunded };
      }
    },
  });

  return { orderSaga, ship };
}
