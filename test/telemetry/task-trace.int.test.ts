// Issue 15: enqueue stores the producer's trace context with the task, and the worker runs the
// handler in a consumer span that continues it, with the messaging attributes and the outcome.
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, DeferError, defineTask, enqueue, PermanentError, type TaskContext, type Worker } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { parentOf, registerTracing } from './otel-sdk.js';

const exporter = registerTracing();
const t = useTestDatabase();
const track = useWorkers();
const app = trace.getTracer('app');

/** Runs `fn` in a new active span of the application; returns what it returned and the span. */
async function inSpan<T>(name: string, fn: () => Promise<T>): Promise<{ result: T; span: ReadableSpan }> {
  const result = await app.startActiveSpan(name, async (span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
  return { result, span: exporter.getFinishedSpans().findLast((s) => s.name === name)! };
}

/** The finished spans named `name`, once there are `n` of them. */
async function spansNamed(name: string, n = 1): Promise<ReadableSpan[]> {
  await expect.poll(() => exporter.getFinishedSpans().filter((s) => s.name === name).length, { timeout: 15_000 }).toBe(n);
  return exporter.getFinishedSpans().filter((s) => s.name === name);
}

async function started(worker: Worker): Promise<Worker> {
  track(worker);
  await worker.start();
  return worker;
}

describe('a task continues the trace that enqueued it', () => {
  it('stores the traceparent with the row; the handler runs in a consumer span, child of the enqueuing span', async () => {
    let activeInHandler: string | undefined;
    const task = defineTask<{ n: number }>('traced-ok', { handler: () => void (activeInHandler = trace.getActiveSpan()?.spanContext().spanId) });
    const { result: added, span: request } = await inSpan('POST /signup', () => enqueue(t.pool, task, { n: 1 }));
    const { rows } = await sql<{ traceparent: string | null }>`SELECT traceparent FROM leasehold.task WHERE id = ${added.id}`.execute(t.db);
    expect(rows[0]!.traceparent).toBe(`00-${request.spanContext().traceId}-${request.spanContext().spanId}-01`);

    const worker = await started(createWorker({ pool: t.pool, tasks: [task], logger: null }));
    await nextEvent(worker, 'task:succeeded');
    await worker.stop();
    const [span] = await spansNamed('process traced-ok');
    expect(span!.kind).toBe(SpanKind.CONSUMER);
    expect(span!.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(parentOf(span!)).toBe(request.spanContext().spanId);
    expect(activeInHandler).toBe(span!.spanContext().spanId);
    expect(span!.attributes).toEqual({
      'messaging.system': 'leasehold',
      'messaging.operation.name': 'process',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'traced-ok',
      'messaging.message.id': added.id,
      'leasehold.attempt': 1,
      'leasehold.table': 'leasehold.task',
      'leasehold.outcome': 'succeeded',
    });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a task enqueued outside any span stores none, and its span starts a trace of its own', async () => {
    const task = defineTask('untraced', { handler: () => undefined });
    const added = await enqueue(t.pool, task, {});
    const { rows } = await sql<{ traceparent: string | null; tracestate: string | null }>`SELECT traceparent, tracestate FROM leasehold.task WHERE id = ${added.id}`.execute(t.db);
    expect(rows[0]).toEqual({ traceparent: null, tracestate: null });
    const worker = await started(createWorker({ pool: t.pool, tasks: [task], logger: null }));
    await nextEvent(worker, 'task:succeeded');
    await worker.stop();
    const [span] = await spansNamed('process untraced');
    expect(parentOf(span!)).toBeUndefined();
  });

  it('a follow-up enqueued by a handler (ctx.enqueue) is a child of the handler span', async () => {
    const second = defineTask('second-step', { handler: () => undefined });
    const first = defineTask('first-step', { handler: (_p, ctx) => ctx.enqueue(second, {}) });
    await inSpan('request', () => enqueue(t.pool, first, {}));
    const worker = await started(createWorker({ pool: t.pool, tasks: [first, second] }));
    await nextEvent(worker, 'task:succeeded', ({ task }) => task.name === 'second-step');
    await worker.stop();
    const [a] = await spansNamed('process first-step');
    const [b] = await spansNamed('process second-step');
    expect(b!.spanContext().traceId).toBe(a!.spanContext().traceId);
    expect(parentOf(b!)).toBe(a!.spanContext().spanId);
  });
});

describe('the span records what became of the attempt', () => {
  it('retried, then succeeded: two spans, the first failed with the error and outcome retried', async () => {
    let calls = 0;
    const task = defineTask('flaky', {
      backoff: { base: '1ms', cap: '1ms' },
      handler: () => {
        if (++calls === 1) throw new Error('mail server busy');
      },
    });
    await inSpan('request', () => enqueue(t.pool, task, {}));
    const worker = await started(createWorker({ pool: t.pool, tasks: [task], pollInterval: '50ms', logger: null }));
    await nextEvent(worker, 'task:succeeded');
    await worker.stop();
    const [failed, ok] = (await spansNamed('process flaky', 2)).sort((x, y) => Number(x.attributes['leasehold.attempt']) - Number(y.attributes['leasehold.attempt']));
    expect(failed!.attributes).toMatchObject({ 'leasehold.attempt': 1, 'leasehold.outcome': 'retried', 'error.type': 'Error' });
    expect(failed!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'mail server busy' });
    expect(failed!.events.map((e) => e.name)).toEqual(['exception']);
    expect(ok!.attributes).toMatchObject({ 'leasehold.attempt': 2, 'leasehold.outcome': 'succeeded' });
    // both attempts continue the producer's trace
    expect(parentOf(ok!)).toBe(parentOf(failed!));
  });

  it('dead after a PermanentError: failed, outcome dead', async () => {
    const task = defineTask('doomed', { handler: () => Promise.reject(new PermanentError('no such user')) });
    await enqueue(t.pool, task, {});
    const worker = await started(createWorker({ pool: t.pool, tasks: [task], logger: null }));
    await nextEvent(worker, 'task:dead');
    await worker.stop();
    const [span] = await spansNamed('process doomed');
    expect(span!.attributes).toMatchObject({ 'leasehold.outcome': 'dead', 'error.type': 'PermanentError' });
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'no such user' });
  });

  it('deferred: outcome deferred, not failed', async () => {
    const task = defineTask('later', { handler: () => Promise.reject(new DeferError('1h', 'shop closed')) });
    await enqueue(t.pool, task, {});
    const worker = await started(createWorker({ pool: t.pool, tasks: [task], logger: null }));
    await nextEvent(worker, 'task:deferred');
    await worker.stop();
    const [span] = await spansNamed('process later');
    expect(span!.attributes).toMatchObject({ 'leasehold.outcome': 'deferred' });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('lease lost (the fence moved on while the handler ran): failed with LeaseLostError, outcome lease_lost', async () => {
    const hold = gate();
    const task = defineTask('overtaken', { handler: () => hold.wait });
    const added = await enqueue(t.pool, task, {});
    const worker = await started(createWorker({ pool: t.pool, tasks: [task], logger: null }));
    await nextEvent(worker, 'task:claimed');
    // another worker took the task over: its token moved on
    await sql`UPDATE leasehold.task SET lease_version = lease_version + 1 WHERE id = ${added.id}`.execute(t.db);
    const lost = nextEvent(worker, 'task:lease-lost');
    hold.open();
    await lost;
    await worker.stop();
    const [span] = await spansNamed('process overtaken');
    expect(span!.attributes).toMatchObject({ 'leasehold.outcome': 'lease_lost', 'error.type': 'LeaseLostError' });
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe('workflow steps in the trace', () => {
  it('each step that runs is a span, child of the handler span; a replayed step is not', async () => {
    let run = 0;
    const flow = defineTask('traced-flow', {
      maxAttempts: 3,
      backoff: { base: '1ms', cap: '5ms' },
      handler: async (_p: object, ctx: TaskContext) => {
        run++;
        await ctx.step('first', () => 1);
        if (run === 1) throw new Error('again');
        await ctx.dbStep('second', async (client) => void (await client.query('SELECT 1')));
      },
    });
    await enqueue(t.pool, flow, {});
    const worker = await started(createWorker({ pool: t.pool, tasks: [flow], logger: null, pollInterval: 20 }));
    await nextEvent(worker, 'task:succeeded');
    await worker.stop();
    const handlers = await spansNamed('process traced-flow', 2);
    const [first] = await spansNamed('step first');
    const [second] = await spansNamed('step second');
    expect(parentOf(first!)).toBe(handlers[0]!.spanContext().spanId);
    expect(parentOf(second!)).toBe(handlers[1]!.spanContext().spanId);
    expect(second!.attributes).toMatchObject({ 'leasehold.step.name': 'second', 'leasehold.step.kind': 'database', 'leasehold.task.name': 'traced-flow' });
  });
});
