// JSON in, JSON out (issue 34): a payload JSON would change or drop (a Date, a Map, NaN, a
// function, undefined in an array) is refused by the call that supplies it, with a typed error
// naming the path, and nothing is stored — for enqueueMany, none of the batch.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  createWorker,
  defineSignal,
  defineTask,
  enqueue,
  enqueueMany,
  isLeaseholdError,
  PayloadValidationError,
  sendSignal,
  type TaskDefinition,
} from '@leasehold/core';
import { createOutbox } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { readMessages, resetOutbox } from '../outbox/helpers.js';

const t = useTestDatabase();
const track = useWorkers();

// typed as a JavaScript caller (or a variable of a wider type) would reach it: the run-time check
// is what stands between these values and the table
const report = defineTask<unknown>('json-report', { handler: async () => {} }) as TaskDefinition<unknown, unknown, false>;

async function count(table: 'task' | 'task_signal', where = sql`true`): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.id('leasehold', table)} WHERE ${where}`.execute(t.db);
  return Number(rows[0]?.n);
}

async function refusal(attempt: Promise<unknown>): Promise<PayloadValidationError> {
  const error = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PayloadValidationError);
  expect(isLeaseholdError(error, 'PAYLOAD_VALIDATION')).toBe(true);
  return error as PayloadValidationError;
}

describe('a payload that is not JSON is refused where it enters, and nothing is stored', () => {
  it.each([
    ['a Date', { when: new Date('2026-12-04T00:00:00Z') }, 'payload.when', 'a Date is not JSON; pass an ISO string'],
    ['a Map', { seen: new Map([['a', 1]]) }, 'payload.seen', 'a Map is not JSON'],
    ['NaN', { total: Number.NaN }, 'payload.total', 'NaN is not JSON'],
    ['undefined in an array', { ids: ['a', undefined] }, 'payload.ids[1]', 'undefined is not JSON'],
    ['a function', { done: () => undefined }, 'payload.done', 'a function is not JSON'],
  ])('enqueue refuses %s with a PayloadValidationError naming the path', async (_label, payload, path, problem) => {
    const before = await count('task');
    // on the pool (the shared-insert path) and in a transaction
    const onPool = await refusal(enqueue(t.pool, report, payload));
    expect(onPool.path).toBe(path);
    expect(onPool.message).toMatch(new RegExp(`^invalid payload for task "json-report": ${path.replace(/[[\].]/g, '\\$&')}: ${problem}`));
    await t.db.transaction().execute(async (trx) => {
      await refusal(enqueue(trx, report, payload));
      // the caller's transaction is still usable: nothing reached the database
      await sql`SELECT 1`.execute(trx);
    });
    expect(await count('task')).toBe(before);
  });

  it('enqueueMany with one bad item stores none of the batch', async () => {
    const before = await count('task');
    const items = [{ payload: { n: 1 } }, { payload: { n: 2 } }, { payload: { at: new Date() } }, { payload: { n: 4 } }];
    const error = await refusal(enqueueMany(t.pool, report, items));
    expect(error.path).toBe('payload.at');
    expect(error.message).toContain('payload.at: a Date is not JSON');
    expect(await count('task')).toBe(before);
    // the same items, made JSON, go in
    const fixed = items.map((item) => ({ payload: JSON.parse(JSON.stringify(item.payload)) as unknown }));
    expect(await enqueueMany(t.pool, report, fixed)).toHaveLength(4);
    expect(await count('task')).toBe(before + 4);
  });

  it('sendSignal refuses a signal payload that is not JSON with a ConfigError; no signal is stored', async () => {
    const { id } = await enqueue(t.pool, report, { n: 1 });
    const approved = defineSignal<unknown>('approved');
    const error = await sendSignal(t.pool, id, approved, { at: new Date() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/\.at is a Date; pass an ISO string/);
    expect(await count('task_signal', sql`task_id = ${id}::bigint`)).toBe(0);
  });

  it('the outbox refuses an event payload that is not JSON with a ConfigError naming the path; nothing is stored', async () => {
    await resetOutbox(t.db);
    const outbox = createOutbox();
    const event = (payload: unknown) => ({ aggregateType: 'order', aggregateId: 1, eventType: 'OrderPaid', payload });
    await expect(outbox.add(t.pool, event({ paidAt: new Date() }))).rejects.toMatchObject({
      code: 'CONFIG',
      option: 'event.payload.paidAt',
      message: expect.stringContaining('event.payload.paidAt: a Date is not JSON') as unknown,
    });
    await expect(outbox.addMany(t.pool, [event({ ok: true }), event({ lines: [{ qty: Number.POSITIVE_INFINITY }] })])).rejects.toMatchObject({
      option: 'events[1].payload.lines[0].qty',
    });
    expect(await readMessages(t.db)).toEqual([]);
  });

  it('a checkpoint that is not JSON sends the task dead with the path; nothing is saved', async () => {
    const saving = defineTask<{ n: number }>('json-checkpoint', {
      handler: async (_payload, ctx) => ctx.checkpoint({ seen: new Set([1]) }),
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [saving], pollInterval: '10s', logger: null }));
    await worker.start();
    const dead = nextEvent(worker, 'task:dead');
    const { id } = await enqueue(t.pool, saving, { n: 1 });
    const { error } = await dead;
    expect(error.message).toBe('the checkpoint of task "json-checkpoint" is not JSON-serialisable: .seen is a Set; pass an array ([...set]) (JSON would store {})');
    const { rows } = await sql<{ checkpoint: unknown; status: string }>`SELECT checkpoint, status FROM leasehold.task WHERE id = ${id}::bigint`.execute(t.db);
    expect(rows).toEqual([{ checkpoint: null, status: 'dead' }]);
    await worker.stop();
  });
});
