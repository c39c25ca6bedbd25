// Compiled by `npm run typecheck`, never run: each @ts-expect-error line must stay an error,
// proving that workflow types flow end to end: step results, child payloads and results,
// signal payloads, and task results read by waitForResult / getTask.
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { defineSignal, defineTask, enqueue, getTask, sendSignal, waitForResult, type TaskContext } from '@leasehold/core';

declare const pool: pg.Pool;
declare const appDb: Kysely<{ stock: { sku: string; reserved: number } }>;

const approved = defineSignal<{ by: string }>('approved');
const cancelled = defineSignal('customer-cancelled'); // no payload
// a signal's payload is stored as JSON, as a task's is: a type that is not JSON does not compile
// @ts-expect-error -- the signal payload type is not JSON: `when` is a Date
defineSignal<{ when: Date }>('rescheduled');
// @ts-expect-error -- nor is a Map, however deep
defineSignal<{ order: { lines: Map<string, number> } }>('amended');
defineSignal<{ when: string; lines?: readonly { sku: string }[] }>('rescheduled-json'); // JSON: compiles

const ship = defineTask('ship', {
  handler: async (p: { orderId: string; carrier: 'ups' | 'dhl' }) => ({ tracking: `${p.carrier}-${p.orderId}` }),
});

const order = defineTask('order', {
  handler: async (p: { orderId: string }, ctx: TaskContext) => {
    const charge = await ctx.step('charge', async () => ({ chargeId: 'ch_1', cents: 1200 }));
    const cents: number = charge.cents;
    // @ts-expect-error -- the step's result has no `amount`
    void charge.amount;
    // @ts-expect-error -- a step's result keeps its type: chargeId is a string
    const wrong: number = charge.chargeId;

    const reserved = await ctx.dbStep('reserve', appDb, async (trx) => {
      await trx.updateTable('stock').set({ reserved: 1 }).where('sku', '=', p.orderId).execute();
      // @ts-expect-error -- the transaction is typed by the application's database
      await trx.updateTable('stocks').set({ reserved: 1 }).execute();
      return true;
    });

    const signal = await ctx.waitForSignal(approved, { timeout: '1d' });
    if (!signal.timedOut) {
      const by: string = signal.payload.by;
      // @ts-expect-error -- the signal's payload has no `at`
      void signal.payload.at;
      void by;
    }
    // @ts-expect-error -- a timed-out wait has no payload
    void signal.payload;

    // @ts-expect-error -- a child's payload is checked against its task: carrier must be 'ups' | 'dhl'
    await ctx.spawn('ship-bad', ship, [{ payload: { orderId: p.orderId, carrier: 'fedex' } }]);
    const kids = await ctx.spawn('ship', ship, [{ payload: { orderId: p.orderId, carrier: 'ups' } }]);
    const [shipped] = await ctx.waitForChildren(kids);
    const tracking: string | undefined = shipped?.tracking;
    // @ts-expect-error -- a child's result is typed by its handler
    const notThere: number = shipped!.tracking;

    await ctx.sleep('cool-off', '1h');
    void [cents, wrong, reserved, tracking, notThere];
    return { orderId: p.orderId, tracking };
  },
});

export async function valid(): Promise<void> {
  const handle = await enqueue(pool, order, { orderId: 'o-1' });
  const result = await waitForResult(pool, handle, { timeout: '1m' });
  const orderId: string = result.orderId;
  // @ts-expect-error -- the task's result has no `total`
  void result.total;
  const info = await getTask(pool, handle);
  const tracking: string | undefined = info?.result?.tracking;

  await sendSignal(pool, handle, approved, { by: 'ann' });
  // @ts-expect-error -- a wrong signal payload type
  await sendSignal(pool, handle, approved, { by: 42 });
  // @ts-expect-error -- a signal with a payload needs it
  await sendSignal(pool, handle, approved);
  await sendSignal(pool, handle.id, cancelled);
  // @ts-expect-error -- a wrong payload for the enqueue of a workflow
  await enqueue(pool, order, { orderId: 1 });
  void [orderId, tracking];
}
