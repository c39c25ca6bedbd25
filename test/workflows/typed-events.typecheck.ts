// Compiled by `npm run typecheck`, never run: each @ts-expect-error line must stay an error,
// proving that a progress event's value type flows from defineEvent to ctx.setEvent and getEvent.
import type pg from 'pg';
import { defineEvent, defineTask, getEvent, type TaskContext } from '@leasehold/core';

declare const pool: pg.Pool;

const payment = defineEvent<{ stage: 'captured' | 'approved'; by?: string }>('payment');
// stored as JSON: a value type that is not JSON does not compile
// @ts-expect-error -- the event value type is not JSON: `at` is a Date
defineEvent<{ at: Date }>('moved');

export const order = defineTask('order-typed-events', {
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.setEvent(payment, { stage: 'captured' });
    // @ts-expect-error -- not a stage of the event's type
    await ctx.setEvent(payment, { stage: 'shipped' });
    // @ts-expect-error -- the value is required
    await ctx.setEvent(payment);
    // a plain key takes any value (checked as JSON when set)
    await ctx.setEvent('note', { text: 'hi' });
    return 'ok';
  },
});

export async function read(id: string): Promise<void> {
  const now = await getEvent(pool, id, payment, { timeout: '2s' });
  // undefined until it is set (or when the timeout passed first)
  // @ts-expect-error -- possibly undefined
  void now.stage;
  const stage: 'captured' | 'approved' | undefined = now?.stage;
  void stage;
  const untyped: unknown = await getEvent(pool, id, 'note');
  void untyped;
  const named = await getEvent<{ text: string }>(pool, id, 'note', { timeout: 0 });
  void named?.text;
}
