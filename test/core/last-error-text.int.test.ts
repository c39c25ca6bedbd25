// Issue 34 item 6: last_error (which the dashboard shows every viewer, and the CLI prints) held
// the error's whole stack, with the installation's file paths. It now holds the name, the code
// and the message of the error and its causes, for a task handler and a broker publish alike;
// the worker's log record keeps the stack.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, PermanentError } from '@leasehold/core';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

/** What a broker client throws: a code, and the socket error under it. */
function brokerError(): Error {
  const socket = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  return Object.assign(new Error('no responders available', { cause: socket }), { name: 'NatsError', code: '503' });
}

const NO_STACK = /\n|\s+at |node_modules|\/work\/|\.ts:\d+|file:\/\//;

describe('last_error holds no stack', () => {
  it('a task whose handler throws (retries exhausted), and one that fails permanently', async () => {
    const flaky = defineTask<object>('last-error-flaky', { maxAttempts: 1, handler: async () => Promise.reject(brokerError()) });
    const refused = defineTask<object>('last-error-refused', {
      handler: async () => Promise.reject(new PermanentError('account closed', { cause: brokerError() })),
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [flaky, refused], logger: null }));
    const a = await enqueue(t.pool, flaky, {});
    const b = await enqueue(t.pool, refused, {});
    const deadA = nextEvent(worker, 'task:dead', ({ task }) => task.id === a.id);
    const deadB = nextEvent(worker, 'task:dead', ({ task }) => task.id === b.id);
    await worker.start();
    // the event's error keeps its stack: only the stored text drops it
    expect((await deadA).error.stack).toMatch(/\n\s+at /);
    await deadB;
    await worker.stop();
    const { rows } = await sql<{ id: string; last_error: string }>`SELECT id::text, last_error FROM leasehold.task WHERE id IN (${a.id}, ${b.id}) ORDER BY id`.execute(t.db);
    expect(rows.map((r) => r.last_error)).toEqual([
      'retries exhausted: NatsError [503]: no responders available; cause: Error: read ECONNRESET',
      'PermanentError: account closed; cause: NatsError [503]: no responders available; cause: Error: read ECONNRESET',
    ]);
    for (const r of rows) expect(r.last_error).not.toMatch(NO_STACK);
  });

  it("an outbox message whose publisher throws (the adapters' path)", async () => {
    const outbox = createOutbox();
    const id = await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 1, eventType: 'LastErrorText', payload: {}, maxAttempts: 1 });
    const dispatcher = track(createDispatcher({ pool: t.pool, eventTypes: ['LastErrorText'], logger: null, publisher: { publish: async () => Promise.reject(brokerError()) } }));
    const dead = nextEvent(dispatcher, 'task:dead', ({ task }) => task.id === id);
    await dispatcher.start();
    await dead;
    await dispatcher.stop();
    const { rows } = await sql<{ last_error: string }>`SELECT last_error FROM leasehold.outbox WHERE id = ${id}`.execute(t.db);
    expect(rows[0]!.last_error).toBe('retries exhausted: NatsError [503]: no responders available; cause: Error: read ECONNRESET');
  });
});
