// What the OpenTelemetry SDK alone costs per task, with nothing of leasehold's: the calls a
// worker makes for one task (extract the stored traceparent, start the consumer span with the
// destination's attributes, set the task's two, run an async handler in its context, end it with
// its outcome; record the two histograms), under the SDK process-otel registers
// (lib/otel-sdk.ts). The floor under any per-task instrumentation, to set against a no-op task's
// own CPU (process-1x8's "consumer process CPU per 1,000").
//
//   npx tsx bench/otel-floor.ts            # traces and metrics
//   BENCH_OTEL_PARTS=traces npx tsx bench/otel-floor.ts
import { floorCalls } from './lib/otel-floor-calls.js';
import { registerBenchOtel } from './lib/otel-sdk.js';

const TASKS = 100_000;
const WARM_UP = 20_000;

registerBenchOtel();
const carrier = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
const parts = process.env.BENCH_OTEL_PARTS ?? 'traces,metrics';
const oneTaskCalls = floorCalls(parts);
const noop = async (): Promise<void> => undefined;

function oneTask(i: number): Promise<void> {
  return oneTaskCalls(String(i), 1, carrier, noop, undefined);
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
