// Type tests, checked by `npm run typecheck` and never run: an ordered task's groupKey is required
// by the types of enqueue, enqueueMany and ctx.enqueue, not only by their run-time check, and an
// unordered task's is not. Each @ts-expect-error fails the typecheck if its line compiles.
import type pg from 'pg';
import { createWorker, defineTask, enqueue, enqueueMany, type TaskContext, type TaskDefinition } from '@leasehold/core';

declare const pool: pg.Pool;
const handler = async (): Promise<void> => {};
const ordered = defineTask<{ n: number }>('ordered', { ordered: true, handler });
const unordered = defineTask<{ n: number }>('unordered', { handler });
const unorderedExplicitly = defineTask<{ n: number }>('unordered-explicitly', { ordered: false, handler });
// ordering known only at run time: either form type-checks, and enqueue checks when it runs
declare const eitherWay: TaskDefinition<{ n: number }>;
// the payload type inferred from a validator, with ordered: true
const inferred = defineTask('inferred', {
  ordered: true,
  validate: { parse: (input: unknown) => input as { s: string } },
  handler: async (payload) => void payload.s.length,
});

export async function orderedTasksNeedAGroupKey(): Promise<void> {
  await enqueue(pool, ordered, { n: 1 }, { groupKey: 'order-1' });
  await enqueue(pool, ordered, { n: 1 }, { groupKey: 'order-1', delay: '1s', dedupKey: 'd' });
  // @ts-expect-error no options: an ordered task needs a groupKey
  await enqueue(pool, ordered, { n: 1 });
  // @ts-expect-error options without a groupKey
  await enqueue(pool, ordered, { n: 1 }, { delay: '1s' });
  // @ts-expect-error an undefined groupKey
  await enqueue(pool, ordered, { n: 1 }, { groupKey: undefined });
  await enqueue(pool, inferred, { s: 'x' }, { groupKey: 'g' });
  // @ts-expect-error inferred payload type, still ordered
  await enqueue(pool, inferred, { s: 'x' });

  await enqueueMany(pool, ordered, [{ payload: { n: 1 }, groupKey: 'a' }, { payload: { n: 2 }, groupKey: 'b' }]);
  // @ts-expect-error one item without a groupKey
  await enqueueMany(pool, ordered, [{ payload: { n: 1 }, groupKey: 'a' }, { payload: { n: 2 } }]);
}

export async function unorderedTasksDoNot(): Promise<void> {
  await enqueue(pool, unordered, { n: 1 });
  await enqueue(pool, unordered, { n: 1 }, { delay: '1s' });
  await enqueue(pool, unordered, { n: 1 }, { groupKey: 'still allowed' });
  await enqueue(pool, unorderedExplicitly, { n: 1 });
  await enqueueMany(pool, unordered, [{ payload: { n: 1 } }, { payload: { n: 2 }, groupKey: 'g' }]);
  await enqueue(pool, eitherWay, { n: 1 });
  await enqueue(pool, eitherWay, { n: 1 }, { groupKey: 'g' });
  await enqueueMany(pool, eitherWay, [{ payload: { n: 1 } }]);
  // @ts-expect-error the payload type is still checked
  await enqueue(pool, unordered, { n: 'one' });
}

export function followUpsToo(ctx: TaskContext): void {
  ctx.enqueue(ordered, { n: 1 }, { groupKey: 'order-1' });
  // @ts-expect-error a follow-up of an ordered task needs a groupKey as well
  ctx.enqueue(ordered, { n: 1 });
  ctx.enqueue(unordered, { n: 1 });
}

export function workersTakeEveryKind(): void {
  createWorker({ pool, tasks: [ordered, unordered, unorderedExplicitly, eitherWay, inferred] });
}
