// What the runner passes to a child process, and the pool every child builds from it.
import pg from 'pg';
import { CHILD_APPLICATION_NAME } from './server-cpu.js';

export interface ChildOptions {
  /** Bench database. */
  readonly url: string;
  readonly schema: string;
  readonly n?: number;
  readonly clients?: number;
  readonly chunk?: number;
  readonly rate?: number;
  readonly concurrency?: number;
  /** Worker: most tasks per claim statement (default: the library's). */
  readonly batch?: number;
  /** Worker: tasks claimed ahead beyond the running ones (default: the library's). */
  readonly prefetch?: number;
  /** Worker: report every handler start (latency). */
  readonly reportStarts?: boolean;
  /** Worker: handlers wait until stopped instead of returning at once (heartbeat). */
  readonly hold?: boolean;
  /** Worker: task lease in ms. */
  readonly leaseMs?: number;
  /** Worker: count the statements it issues by kind (heartbeat). */
  readonly countStatements?: boolean;
  /** Worker: register an OpenTelemetry SDK first (see otel-sdk.ts), so it traces and measures every task. */
  readonly otel?: boolean;
  /**
   * Worker: its retention (see workloads/retention.ts): off, or done rows deleted past `doneMs`
   * with a turn every `everyMs`. Left out: the library's default.
   */
  readonly retention?: false | { readonly doneMs: number; readonly everyMs: number };
}

/** A pool on the bench database; every child opens its connections before the clock starts. */
export function createPool(options: ChildOptions, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: options.url, max, application_name: CHILD_APPLICATION_NAME });
  pool.on('error', (e) => console.error(`[bench child pool] ${e.message}`));
  return pool;
}
