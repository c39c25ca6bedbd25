// Prometheus metrics of a leasehold worker: the OpenTelemetry SDK's Prometheus exporter behind the
// application's own /metrics route (see metrics-endpoint.ts). The program runs a worker through
// a mix of outcomes (done, retried, dead, deferred, and a queue nobody works on), checks that its
// own /metrics shows every leasehold metric, prints OK, and keeps serving until Ctrl-C/SIGTERM.
//   npm run prometheus -w @leasehold/examples   (DATABASE_URL, or a throwaway server; PORT, default 9464)
//   curl http://127.0.0.1:9464/metrics
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWorker, DeferError, defineTask, enqueueMany, METRICS, migrate, PermanentError, queueStats } from '@leasehold/core';
import { openDatabase } from '../shared/database.js';
import { createPool } from '../shared/pool.js';
import { shutdownSignal } from '../shared/shutdown.js';
import { registerPrometheus } from './metrics-endpoint.js';

const SCHEMA = 'prometheus_example';
const signal = shutdownSignal();
const database = await openDatabase(signal);
const pool = createPool(database.url, 4);
const { serveMetrics, queues } = registerPrometheus(pool, SCHEMA);
const server = createServer((req, res) => (req.url === '/metrics' ? serveMetrics(req, res) : res.writeHead(404).end()));
let code = 1;
try {
  await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(pool, { schema: SCHEMA });
  const flaky = new Set<number>();
  const tasks = [
    defineTask<{ n: number }>('resize-image', { handler: () => undefined }),
    defineTask<{ n: number }>('sync-crm', {
      backoff: { base: '10ms', cap: '10ms' },
      // fails once per task, then works: retried, then done
      handler: ({ n }) => {
        if (flaky.has(n)) return;
        flaky.add(n);
        throw new Error('CRM busy');
      },
    }),
    defineTask<{ n: number }>('charge-card', { handler: () => Promise.reject(new PermanentError('card declined')) }),
    defineTask<{ n: number }>('send-digest', { handler: () => Promise.reject(new DeferError('1h', 'outside office hours')) }),
  ];
  const worker = createWorker({ pool, schema: SCHEMA, tasks, pollInterval: '200ms', logger: null });
  await worker.start();
  await queues.start();
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 9464), '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;

  const items = (count: number) => Array.from({ length: count }, (_, n) => ({ payload: { n } }));
  for (const [task, count] of [[tasks[0]!, 20], [tasks[1]!, 5], [tasks[2]!, 2], [tasks[3]!, 1]] as const) await enqueueMany(pool, task, items(count), { schema: SCHEMA });
  // a queue no worker here runs: pending, and ageing
  await enqueueMany(pool, defineTask('rebuild-index', { handler: () => undefined }), items(3), { schema: SCHEMA });

  // every metric shows once the work has settled and the gauges have read the table again
  const missing = async () => {
    const text = await (await fetch(url, { signal })).text();
    // a series line: the name (a histogram's with _bucket, _sum or _count), then its labels
    return METRICS.filter((m) => !text.split('\n').some((line) => line.startsWith(`${m.prometheus}{`) || line.startsWith(`${m.prometheus}_count{`))).map((m) => m.prometheus);
  };
  const deadline = Date.now() + 30_000;
  let left = await missing();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    left = await missing();
  }
  for (const q of await queueStats(pool, { schema: SCHEMA })) console.log(`${q.name}: ${q.pending} pending, ${q.done} done, ${q.dead} dead`);
  console.log(left.length === 0 ? `OK: every leasehold metric is on ${url}` : `FAILED: missing from ${url}: ${left.join(', ')}`);
  console.log(`metrics: ${url} (Ctrl-C stops)`);
  if (left.length === 0) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  queues.stop();
  await worker.stop({ timeout: '5s' });
  code = left.length === 0 ? 0 : 1;
} catch (error) {
  code = signal.aborted ? 130 : 1;
  if (!signal.aborted) console.error('example failed:', error);
} finally {
  server.close();
  await pool.end();
  await database.close();
}
process.exit(code);
