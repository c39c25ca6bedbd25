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

// payload types are JSON (issue 34): what JSON would change or drop does not compile, wherever
// the type comes from; everything JSON, interfaces and `unknown` included, still does
interface Invoice {
  id: string;
  lines: { sku: string; qty: number }[];
  note?: string;
  parent?: Invoice;
}
const noop = async (): Promise<void> => {};
defineTask<Invoice>('invoice', { handler: noop });
defineTask<unknown>('anything', { handler: noop });
defineTask<object>('any-object', { handler: noop });
defineTask<Record<string, unknown>>('record', { handler: noop });
defineTask<{ at: string; tags: readonly string[]; meta: { n: number | null } }>('json', { handler: noop });
defineTask('inferred-json', { handler: async (p: { at: string }) => void p.at });
// @ts-expect-error -- a Date is not JSON: it would arrive as a string
defineTask<{ when: Date }>('date', { handler: noop });
// @ts-expect-error -- nested and optional: still refused
defineTask<{ order?: { lines: { at: Date }[] } }>('nested-date', { handler: noop });
// @ts-expect-error -- a Map would be stored as {}
defineTask<{ seen: Map<string, number> }>('map', { handler: noop });
// @ts-expect-error -- a function is dropped
defineTask<{ n: number; done: () => void }>('function', { handler: noop });
// @ts-expect-error -- a bigint does not serialise
defineTask<{ id: bigint }>('bigint', { handler: noop });
// @ts-expect-error -- the payload type inferred from the handler is checked too
defineTask('inferred-date', { handler: async (p: { when: Date }) => void p.when });
// @ts-expect-error -- and from the validator
defineTask('validated-set', { validate: { parse: (input: unknown) => input as { ids: Set<string> } }, handler: noop });

// a handler's result and a checkpoint are stored as JSON too
defineTask('json-result', { handler: async (p: { n: number }) => ({ doubled: p.n * 2, at: new Date().toISOString() }) });
defineTask<{ n: number }, { done: number }>('json-checkpoint', { handler: noop });
// @ts-expect-error -- a result that is a Date would come back a string from waitForResult
defineTask('date-result', { handler: async (p: { n: number }) => ({ n: p.n, at: new Date() }) });
// @ts-expect-error -- a checkpoint type with a Map would come back as {}
defineTask<{ n: number }, { seen: Map<string, number> }>('map-checkpoint', { handler: noop });
