// Measures wake-up latency through PgBouncer in transaction mode (issue 36): jobs enqueued at a
// steady rate through the pooler, each timed from its enqueue's return to its handler's start.
// Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx --conditions=@leasehold/source test/pooler/latency.ts [jobs] [rate]
// Modes: through PgBouncer with a direct LISTEN connection; through PgBouncer polling (the
// default 2 s); directly on PostgreSQL (the baseline). Nothing is asserted: it prints numbers.
import pg from 'pg';
import { createWorker, defineTask, enqueue, migrate, noPreparedStatements, type WorkerOptions } from '@leasehold/core';
import { startPgBouncer, stopPgBouncer, throughPgBouncer } from './pgbouncer.js';

const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) throw new Error('set DATABASE_URL to a server where this may create a database');
const jobs = Number(process.argv[2] ?? 1_000);
const rate = Number(process.argv[3] ?? 100);
const database = `lh_pooler_latency_${process.pid}`;
const withDatabase = (url: string, name: string) => Object.assign(new URL(url), { pathname: `/${name}` }).toString();

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function run(label: string, poolUrl: string, options: Partial<WorkerOptions>, pooled: boolean): Promise<void> {
  const started = new Map<number, number>();
  const enqueued = new Map<number, number>();
  let errors = 0;
  let last = () => {};
  const work = defineTask<{ n: number }>(`latency-${label.replaceAll(/\W+/g, '-')}`, {
    handler: ({ n }) => {
      started.set(n, performance.now());
      if (started.size === jobs) last();
    },
  });
  const pool = new pg.Pool({ connectionString: poolUrl, max: 10 });
  if (pooled) noPreparedStatements(pool);
  const worker = createWorker({ pool, tasks: [work], concurrency: 8, logger: null, ...options });
  worker.on('worker:error', () => errors++);
  await worker.start();
  const allStarted = new Promise<void>((resolve) => (last = resolve));
  const t0 = performance.now();
  let enqueueErrors = 0;
  for (let n = 0; n < jobs; n++) {
    // a steady rate, by the schedule rather than by sleeping a fixed time after each enqueue
    const due = t0 + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    try {
      await enqueue(pool, work, { n });
      enqueued.set(n, performance.now());
    } catch {
      enqueueErrors++;
    }
  }
  await allStarted;
  await worker.stop({ timeout: '5s' });
  await pool.end();
  const latencies = [...started].map(([n, at]) => Math.max(0, at - enqueued.get(n)!)).sort((a, b) => a - b);
  const f = (ms: number) => ms.toFixed(1);
  console.log(
    `${label.padEnd(44)} jobs ${jobs} at ${rate}/s: p50 ${f(percentile(latencies, 50))} ms, p99 ${f(percentile(latencies, 99))} ms, max ${f(latencies.at(-1)!)} ms; errors: enqueue ${enqueueErrors}, worker ${errors}`,
  );
}

await admin(`CREATE DATABASE ${database}`);
const direct = withDatabase(adminUrl, database);
const bouncer = await startPgBouncer(adminUrl, 10);
try {
  const setup = new pg.Pool({ connectionString: direct, max: 2 });
  await migrate(setup);
  await setup.end();
  const viaBouncer = throughPgBouncer(adminUrl, bouncer.port, database);
  await run('PgBouncer, listenConnectionString (direct)', viaBouncer, { noPreparedStatements: true, listenConnectionString: direct }, true);
  await run('PgBouncer, polling (pollInterval 2s)', viaBouncer, { noPreparedStatements: true }, true);
  await run('direct (no pooler), LISTEN', direct, {}, false);
} finally {
  await stopPgBouncer(bouncer);
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}
