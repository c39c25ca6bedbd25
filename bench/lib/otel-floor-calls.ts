// The OpenTelemetry SDK calls a worker makes for one task, with nothing of leasehold's: extract the
// stored traceparent, start the consumer span with the destination's attributes, set the task's
// two, run the handler in its context, end it with its outcome, and record the two histograms.
// The floor under any per-task instrumentation: otel-floor.ts times these calls alone,
// otel-ours.ts around the real runner's handler, so both measure the same floor.
import { context, metrics, propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';

/** One task's calls around `handler(arg)`; `parts` holds 'traces' and/or 'metrics'. */
export type FloorCalls = <A>(id: string, attempt: number, carrier: object, handler: (arg: A) => Promise<void>, arg: A) => Promise<void>;

export function floorCalls(parts: string): FloorCalls {
  const tracer = trace.getTracer('otel-floor');
  const meter = metrics.getMeter('otel-floor');
  const wait = meter.createHistogram('floor.wait', { unit: 's' });
  const handled = meter.createHistogram('floor.handler', { unit: 's' });
  const series = Object.freeze({ 'messaging.system': 'leasehold', 'messaging.destination.name': 'noop', 'leasehold.table': 'leasehold.task' });
  const spanOptions = Object.freeze({
    kind: SpanKind.CONSUMER,
    attributes: Object.freeze({ ...series, 'messaging.operation.name': 'process', 'messaging.operation.type': 'process' }),
  });
  const traces = parts.includes('traces');
  const metered = parts.includes('metrics');
  return async (id, attempt, carrier, handler, arg) => {
    const startedAt = performance.now();
    if (traces) {
      const parent = propagation.extract(ROOT_CONTEXT, carrier);
      const span = tracer.startSpan('process noop', spanOptions, parent);
      span.setAttribute('messaging.message.id', id);
      span.setAttribute('leasehold.attempt', attempt);
      await context.with(trace.setSpan(parent, span), handler, undefined, arg);
      span.setAttribute('leasehold.outcome', 'succeeded');
      span.end();
    } else await handler(arg);
    if (metered) {
      wait.record(0.001, series);
      handled.record((performance.now() - startedAt) / 1000, series);
    }
  };
}
