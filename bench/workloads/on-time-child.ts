// Child script of the on-time workloads (on-time.ts forks it through bench/lib/child.ts's Child,
// with the flags of every bench child): one leasehold worker at the library's defaults
// (createWorker with only pool, schema and tasks) running some of on-time-tasks.ts's task types.
//
//   on-time-child.ts worker '<json OnTimeChildOptions>'
//
// It speaks the runner's consumer protocol ('ready', 'go' → 'started', 'stats', 'reset-stats',
// 'stop'; like bench/lib/child-serve.ts, but with no timer of its own unless `reportCounts`, so
// an idle worker's CPU is the worker's) and sends { type: 'start', i, t, kind } for every measured
// handler start (t: wall-clock ms, this process's clock), { type: 'end', … } when an unlimited
// task's handler ends, and { type: 'claimed', … } with a limited task's claim time (the database's
// clock, from the lease the claim set). Before 'ready' it measures the offset between the database's clock and its
// own (clock_timestamp() against the midpoint of the round trip, best of 7), reported by 'stats'.
// With `countStatements` every statement sent on any of its connections is counted, the LISTEN
// connection's included: the pool builds its clients, and the listener its own, from a pg.Client
// subclass that counts its `query` calls.
import { createWorker } from '@leasehold/core';
import pg from 'pg';
import type { ChildOptions } from '../lib/child-options.js';
import { CHILD_APPLICATION_NAME } from '../lib/server-cpu.js';
import { onTimeTasks, wallNow, type OnTimeKind, type OnTimeSettings } from './on-time-tasks.js';

export interface OnTimeChildOptions extends ChildOptions {
  readonly kinds: readonly OnTimeKind[];
  readonly settings: OnTimeSettings;
  /** Send a 'start' message per handler start (off for the throughput runs). */
  readonly reportStarts?: boolean;
  /** Send the handled count (every 20 ms while it moves; limit-concurrency). */
  readonly reportCounts?: boolean;
  /** Count every statement the worker sends, by kind (idle-cost). */
  readonly countStatements?: boolean;
}

const send = (message: Record<string, unknown>) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

const [, , role = '', json = '{}'] = process.argv;
const options = JSON.parse(json) as OnTimeChildOptions;

/** Statements sent, by kind; `bump` is called by every counting client. */
const counts = new Map<string, number>();
function kindOf(text: string): string {
  if (text.includes('SET lease_until = now() + f.lease_ms')) return 'heartbeat';
  if (text.includes('ready AS (')) return 'claim';
  if (text.includes('f.too_old') || text.includes("SET status = 'done'")) return 'finalize';
  return text.replace(/\s+/g, ' ').trim().slice(0, 60);
}
function bump(arg: unknown): void {
  const text = typeof arg === 'string' ? arg : typeof arg === 'object' && arg !== null && 'text' in arg ? String((arg as { text: unknown }).text) : '?';
  const kind = kindOf(text);
  counts.set(kind, (counts.get(kind) ?? 0) + 1);
}

/** A pg.Client that counts its `query` calls (pool.query goes through one too, once). */
class CountingClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    (this as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      bump(args[0]);
      return query(...args);
    };
  }
}

/** The database's clock minus this process's wall clock, in ms, from the tightest of 7 round trips. */
async function clockOffset(pool: pg.Pool): Promise<{ offsetMs: number; rttMs: number }> {
  let best = { offsetMs: NaN, rttMs: Infinity };
  for (let k = 0; k < 7; k++) {
    const t0 = wallNow();
    const { rows } = await pool.query<{ db: number }>(`SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS db`);
    const t1 = wallNow();
    if (t1 - t0 < best.rttMs) best = { offsetMs: Number(rows[0]!.db) - (t0 + t1) / 2, rttMs: t1 - t0 };
  }
  return best;
}

async function worker(): Promise<void> {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: 10,
    application_name: CHILD_APPLICATION_NAME,
    ...(options.countStatements ? { Client: CountingClient as unknown as new () => pg.ClientBase } : {}),
  });
  pool.on('error', (e) => console.error(`[on-time child pool] ${e.message}`));
  const clock = await clockOffset(pool);
  let handled = 0;
  const tasks = onTimeTasks(options.settings, {
    start: (i, t, kind) => {
      handled++;
      if (options.reportStarts) process.send!({ type: 'start', i, t, kind });
    },
    end: (i, t, kind) => {
      if (options.reportStarts) process.send!({ type: 'end', i, t, kind });
    },
    // the claim's now(), from the lease it set (lease_until = now() + lease); read before any heartbeat
    claimed: async (i, id, leaseMs) => {
      if (!options.reportStarts) return;
      const { rows } = await pool.query<{ t: number }>(
        `SELECT extract(epoch FROM lease_until)::float8 * 1000 - $2::float8 AS t FROM ${options.schema}.task WHERE id = $1::bigint`,
        [id, leaseMs],
      );
      process.send!({ type: 'claimed', i, t: Number(rows[0]!.t), kind: 'L' });
    },
  });
  let failures = 0;
  let cpuAt = process.cpuUsage();
  let since = wallNow();
  // the library's defaults: no concurrency, prefetch, batch or pollInterval given
  const w = createWorker({ pool, schema: options.schema, tasks: options.kinds.map((k) => tasks[k]) });
  w.on('worker:error', ({ error }) => console.error(`[on-time worker] ${error.message}`));
  w.on('task:dead', () => void failures++);
  // the runner went away (Ctrl-C, a crash): do not outlive it
  process.on('disconnect', () => process.exit(1));
  const stats = () => {
    const used = process.cpuUsage(cpuAt);
    return { clock, failures, cpuMs: (used.user + used.system) / 1000, ms: wallNow() - since, statements: Object.fromEntries(counts) };
  };
  // the handled count, only when asked for: an idle worker's CPU is measured with no timer of ours
  let reported = -1;
  const timer = options.reportCounts
    ? setInterval(() => {
        if (handled !== reported) process.send!({ type: 'count', n: (reported = handled) });
      }, 20)
    : undefined;
  const on = async (m: { type: string }) => {
    switch (m.type) {
      case 'go':
        await w.start();
        return send({ type: 'started' });
      case 'stats':
        return send({ type: 'stats', ...stats() });
      case 'reset-stats':
        counts.clear();
        cpuAt = process.cpuUsage();
        since = wallNow();
        return send({ type: 'stats-reset' });
      case 'stop':
        clearInterval(timer);
        await w.stop({ timeout: '10s' });
        await pool.end();
        await send({ type: 'stopped', handled });
        process.exit(0);
    }
  };
  process.on('message', (m: { type: string }) => {
    on(m).catch(async (error: unknown) => {
      await send({ type: 'error', message: error instanceof Error ? error.message : String(error) });
      process.exit(1);
    });
  });
  await send({ type: 'ready' });
}

async function main(): Promise<void> {
  if (role !== 'worker') throw new Error(`unknown role ${role}`);
  await worker();
}

main().catch(async (error: unknown) => {
  await send({ type: 'error', message: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error) });
  process.exit(1);
});
