// A worker process for worker-otel-load.int.test.ts: starts a worker on the task table (after
// registering the tracing SDK between createWorker and start when asked), runs one task (with a
// workflow step), and
// prints what it saw as JSON: whether the OpenTelemetry API was loaded, and the spans finished.
import { createRequire } from 'node:module';
import pg from 'pg';
import { createWorker, defineTask } from '@leasehold/core';

const [url, mode] = process.argv.slice(2) as [string, 'none' | 'sdk-before-start'];
const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes('@opentelemetry/api'));
// a hang guard: the test sees exit code 2 rather than waiting on a child that never finishes
setTimeout(() => process.exit(2), 30_000).unref();
const pool = new pg.Pool({ connectionString: url, max: 4 });
let done!: () => void;
const handled = new Promise<void>((resolve) => (done = resolve));
// a workflow step too: its span is the API's as well
const task = defineTask<{ n: number }>('otel-probe', {
  handler: async (_p, ctx) => {
    await ctx.step('probe', () => 1);
    done();
  },
});
const worker = createWorker({ pool, tasks: [task], logger: null });
const exporter = mode === 'sdk-before-start' ? (await import('./otel-sdk.js')).registerTracing() : undefined;
await worker.start();
await handled;
await worker.stop();
await pool.end();
process.stdout.write(`${JSON.stringify({ apiLoaded: loaded(), spans: exporter?.getFinishedSpans().map((s) => s.name) ?? [] })}\n`);
