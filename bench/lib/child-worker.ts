// The `worker` role of a bench child: one leasehold worker (createWorker) running the bench task,
// reporting its handled count, and on request each handler start or the statements it issued.
import { createWorker } from '@leasehold/core';
import type pg from 'pg';
import { noopWith } from './bench-task.js';
import { registerBenchOtel } from './otel-sdk.js';
import { createPool, type ChildOptions } from './child-options.js';
import { serveConsumer } from './child-serve.js';

type Send = (message: Record<string, unknown>) => Promise<void>;

/** Which kind of statement a worker sent, told apart by its text. */
function statementKind(text: string): string {
  if (text.includes('SET lease_until = now() + f.lease_ms')) return 'heartbeat';
  if (text.includes('ready AS (')) return 'claim'; // the whole claim or the ready-only one
  if (text.includes('f.too_old') || text.includes("SET status = 'done'")) return 'finalize';
  return 'other';
}

type QueryArg = string | { text: string };

/** Counts every statement sent through `pool.query` (the worker's claim, finalize, heartbeat). */
function countStatements(pool: pg.Pool) {
  const counts: Record<string, number> = {};
  const heartbeats: { t: number; rows: number; ms: number }[] = [];
  const query = pool.query.bind(pool) as (arg: QueryArg, values?: unknown[]) => Promise<pg.QueryResult>;
  (pool as unknown as { query: typeof query }).query = async (arg: QueryArg, values?: unknown[]) => {
    const kind = statementKind(typeof arg === 'string' ? arg : arg.text);
    counts[kind] = (counts[kind] ?? 0) + 1;
    const t0 = performance.now();
    const result = await query(arg, values);
    const t = performance.now();
    if (kind === 'heartbeat') heartbeats.push({ t, rows: result.rowCount ?? 0, ms: t - t0 });
    return result;
  };
  return {
    snapshot: () => ({ counts: { ...counts }, heartbeats: [...heartbeats] }),
    reset: () => {
      for (const k of Object.keys(counts)) delete counts[k];
      heartbeats.length = 0;
    },
  };
}

export async function startWorker(options: ChildOptions, send: Send): Promise<void> {
  if (options.otel) registerBenchOtel();
  const pool = createPool(options, 10);
  await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT 1')));
  const counter = options.countStatements ? countStatements(pool) : undefined;
  let handled = 0;
  let lost = 0;
  const task = noopWith({
    lease: options.leaseMs ?? '60s',
    handler: async ({ i }, ctx) => {
      if (options.reportStarts) process.send!({ type: 'start', i, t: process.hrtime.bigint() });
      handled++;
      // heartbeat workload: stay in flight until the worker stops
      if (options.hold) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    },
  });
  const worker = createWorker({
    pool,
    tasks: [task],
    schema: options.schema,
    concurrency: options.concurrency ?? 8,
    ...(options.batch === undefined ? {} : { batch: options.batch }),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.retention === undefined ? {} : { retention: options.retention && { done: options.retention.doneMs, every: options.retention.everyMs } }),
  });
  worker.on('worker:error', ({ error }) => console.error(`[bench worker] ${error.message}`));
  worker.on('task:lease-lost', () => void lost++);
  // what the worker's retention turns deleted, and how long they took
  const purged = { rows: 0, turns: 0, ms: 0, behind: 0 };
  worker.on('retention:purged', (r) => {
    purged.rows += r.deleted.done;
    purged.turns++;
    purged.ms += r.durationMs;
    if (r.behind) purged.behind++;
  });
  await serveConsumer(
    {
      start: () => worker.start(),
      stop: async () => {
        await worker.stop({ timeout: '10s' });
        await pool.end();
      },
      handled: () => handled,
      stats: () => ({ inFlight: worker.inFlightCount, lost, purged, ...counter?.snapshot() }),
      resetStats: () => counter?.reset(),
    },
    send,
  );
}
