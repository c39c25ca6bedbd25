// What the OpenTelemetry SDK alone costs per task, with nothing of leasehold's: the calls a
// worker makes for one task (extract the stored traceparent, start the consumer span with the
// destination's attributes, set the task's two, run an async handler in its context, end it with
// its outcome; record the two histograms), under the SDK process-otel registers
// (lib/otel-sdk.ts). The floor under any per-task instrumentation, to set against a no-op task's
// own CPU (process-1x8's "consumer process CPU per 1,000").
//
//   npx tsx bench/otel-floor.ts            # traces and metrics
//   BENCH_OTEL_PARTS=traces npx tsx bench/otel-floor.ts
import { context, metrics, propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { registerBenchOtel } from './lib/otel-sdk.js';

const TASKS = 100_000;
const WARM_UP = 20_000;

registerBenchOtel();
const tracer = trace.getTracer('otel-floor');
const meter = metrics.getMeter('otel-floor');
const wait = meter.createHistogram('floor.wait', { unit: 's' });
const handler = meter.createHistogram('floor.handler', { unit: 's' });
const series = Object.freeze({ 'messaging.system': 'leasehold', 'messaging.destination.name': 'noop', 'leasehold.table': 'leasehold.task' });
const spanOptions = Object.freeze({
  kind: SpanKind.CONSUMER,
  attributes: Object.freeze({ ...series, 'messaging.operation.name': 'process', 'messaging.operation.type': 'process' }),
});
const carrier = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
const parts = process.env.BENCH_OTEL_PARTS ?? 'traces,metrics';

async function oneTask(i: number): Promise<void> {
  if (parts.includes('traces')) {
    const parent = propagation.extract(ROOT_CONTEXT, carrier);
    const span = tracer.startSpan('process noop', spanOptions, parent);
    span.setAttribute('messaging.message.id', String(i));
    span.setAttribute('leasehold.attempt', 1);
    await context.with(trace.setSpan(parent, span), async () => undefined);
    span.setAttribute('leasehold.outcome', 'succeeded');
    span.end();
  }
  if (parts.includes('metrics')) {
    wait.record(0.001, series);
    handler.record(0.0001, series);
  }
}

async function run(tasks: number): Promise<void> {
  for (let i = 0; i < tasks; i++) {
    await oneTask(i);
    // let the batch span processor's timer and the metric reader run, as between claims
    if (i % 1_000 === 999) await new Promise((resolve) => setImmediate(resolve));
  }
}

await run(WARM_UP);
const before = process.cpuUsage();
await run(TASKS);
const used = process.cpuUsage(before);
console.log(`${parts}: ${((used.user + used.system) / TASKS).toFixed(2)} µs of CPU per task (${TASKS.toLocaleString('en')} tasks, after ${WARM_UP.toLocaleString('en')} to warm up)`);
process.exit(0);
