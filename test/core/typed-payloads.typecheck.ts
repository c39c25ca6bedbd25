// Compiled by `npm run typecheck`, never run: each @ts-expect-error line must stay an error,
// proving that a wrong payload shape does not compile. (An unused @ts-expect-error fails too.)
import type { Kysely } from 'kysely';
import { defineTask, enqueue, enqueueMany, migrate, withTransaction, type TaskContext } from '@leasehold/core';

declare const db: Kysely<object>;
// an application's own typed Kysely works wherever leasehold takes one
declare const appDb: Kysely<{ account: { id: number; email: string } }>;

const sendEmail = defineTask<{ to: string; subject: string }>('send-email', {
  handler: async (payload, ctx) => {
    const to: string = payload.to;
    // @ts-expect-error -- the payload has no `cc`
    void payload.cc;
    // @ts-expect-error -- the follow-up's payload is checked too
    ctx.enqueue(sendEmail, { to: 1, subject: 'x' });
    void to;
  },
});

// the payload type can also come from a validator (e.g. a zod schema)
const resize = defineTask('resize', {
  validate: { parse: (input: unknown) => input as { url: string; width: number } },
  handler: async ({ url, width }) => void `${url}${width.toFixed()}`,
});

// a checkpoint has its own type
defineTask<{ n: number }, { done: number }>('count', {
  handler: async (_payload, ctx: TaskContext<{ done: number }>) => {
    const done: number = ctx.lastCheckpoint?.done ?? 0;
    await ctx.checkpoint({ done: done + 1 });
    // @ts-expect-error -- wrong checkpoint shape
    await ctx.checkpoint({ finished: true });
  },
});

export async function valid(): Promise<void> {
  await migrate(appDb);
  await withTransaction(appDb, (trx) => enqueue(trx, sendEmail, { to: 'c@example.com', subject: 'typed db' }));
  await enqueue(db, sendEmail, { to: 'a@example.com', subject: 'hi' });
  await enqueue(db, resize, { url: 'https://example.com/a.png', width: 200 });
  await enqueueMany(db, sendEmail, [{ payload: { to: 'b@example.com', subject: 'yo' }, priority: 5 }]);
}

export async function invalid(): Promise<void> {
  // @ts-expect-error -- missing `subject`
  await enqueue(db, sendEmail, { to: 'a@example.com' });
  // @ts-expect-error -- `to` must be a string
  await enqueue(db, sendEmail, { to: 42, subject: 'hi' });
  // @ts-expect-error -- the payload of resize, not of sendEmail
  await enqueue(db, sendEmail, { url: 'x', width: 1 });
  // @ts-expect-error -- width must be a number (type from the validator)
  await enqueue(db, resize, { url: 'x', width: '200' });
  // @ts-expect-error -- bulk items are checked too
  await enqueueMany(db, sendEmail, [{ payload: { to: 'b@example.com' } }]);
}
