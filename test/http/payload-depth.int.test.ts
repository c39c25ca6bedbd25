// One nesting limit (INPUT_LIMITS.jsonDepth), checked once where a payload enters. A payload at
// the limit travels enqueue/add → claim → HTTP publish → receiver intact; one level more is
// refused by the call that received it. Before the limit, a payload thousands deep was accepted
// and then went dead at dispatch, where V8's JSON.stringify ran out of stack.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createLeaseWorker, defineTask, enqueue, INPUT_LIMITS, taskTable } from '@leasehold/core';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import { httpPublisher, publisherTaskHandler } from '@leasehold/adapters-http';
import { useTestDatabase } from '../fixtures.js';
import { readMessages, resetOutbox } from '../outbox/helpers.js';
import { nextEvent, useWorkers } from '../workers.js';
import { useTestServer } from './http-server.js';

const t = useTestDatabase();
const server = useTestServer();
const track = useWorkers();

/** `levels` arrays and objects, alternating, around a string; `[[1]]` is 2 levels. */
function nested(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { v: value };
  return value;
}

/** A receiver that records the `data` of each delivery and answers 200. */
function receiveData(): unknown[] {
  const received: unknown[] = [];
  server.reset((_req, res, body) => {
    received.push((JSON.parse(body) as { data: unknown }).data);
    res.writeHead(200).end();
  });
  return received;
}

describe(`payloads nested ${INPUT_LIMITS.jsonDepth} levels deep`, () => {
  const atLimit = nested(INPUT_LIMITS.jsonDepth);
  const overLimit = nested(INPUT_LIMITS.jsonDepth + 1);

  it('a task: enqueue → worker → HTTP publish → receiver, intact; one more level is refused at enqueue', async () => {
    await sql`TRUNCATE leasehold.task`.execute(t.db);
    const deep = defineTask<unknown>('deep', { handler: async () => {} });
    await expect(enqueue(t.pool, deep, overLimit)).rejects.toMatchObject({
      code: 'PAYLOAD_VALIDATION',
      message: expect.stringContaining(`nested deeper than ${INPUT_LIMITS.jsonDepth} levels`),
    });
    const { id } = await enqueue(t.pool, deep, atLimit);
    const received = receiveData();
    const worker = track(
      createLeaseWorker({
        pool: t.pool,
        table: taskTable(),
        names: ['deep'],
        handle: publisherTaskHandler(httpPublisher({ url: `${server.origin}/hook` })),
        pollInterval: '50ms',
      }),
    );
    const done = nextEvent(worker, 'task:succeeded', ({ task }) => task.id === id);
    await worker.start();
    try {
      await done;
    } finally {
      await worker.stop();
    }
    expect(received).toEqual([atLimit]);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task`.execute(t.db);
    expect(rows[0]!.n).toBe(1);
  });

  it('an outbox event: add → dispatcher → HTTP publish → receiver, intact; one more level is refused at add', async () => {
    await resetOutbox(t.db);
    const outbox = createOutbox();
    const event = { aggregateType: 'doc', aggregateId: 'd-1', eventType: 'Edited' };
    await expect(outbox.add(t.pool, { ...event, payload: overLimit })).rejects.toMatchObject({ code: 'CONFIG', option: 'event.payload' });
    await expect(outbox.addMany(t.pool, [{ ...event, payload: {} }, { ...event, payload: overLimit }])).rejects.toMatchObject({
      code: 'CONFIG',
      option: 'events[1].payload',
    });
    const id = await outbox.add(t.pool, { ...event, payload: atLimit });
    const received = receiveData();
    const dispatcher = track(createDispatcher({ pool: t.pool, publisher: httpPublisher({ url: `${server.origin}/hook` }), pollInterval: '50ms' }));
    const done = nextEvent(dispatcher, 'task:succeeded', ({ task }) => task.id === id);
    await dispatcher.start();
    try {
      await done;
    } finally {
      await dispatcher.stop();
    }
    expect(received).toEqual([atLimit]);
    expect(await readMessages(t.db)).toMatchObject([{ id, status: 'done' }]);
  });
});
