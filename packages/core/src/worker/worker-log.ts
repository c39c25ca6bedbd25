import type { Claimed } from '../sql/lease-row.js';
import type { LongCheckout } from './checkout-watch.js';
import { errorCode } from './database-not-ready-error.js';

/**
 * Where a worker logs. Two call shapes are accepted as they are, with no wrapper:
 *
 * - fields first, `logger.warn(fields, message)`: pino and bunyan loggers, recognised by their
 *   `child()` method;
 * - message first, `logger.warn(message, fields)`: `console`, and any other object without
 *   `child()`.
 *
 * `fields` holds `owner`, and for a task `id`, `taskName`, `attempt` and `leaseVersion`; an
 * error travels as `err` (an `Error` with its stack, which pino and bunyan serialize under that
 * key). `error` and `warn` are required; `info` and `debug` are used when present, except
 * `console.debug`: console cannot filter levels, so retries would flood it. The type is written
 * message first, the shape every one of those loggers also accepts.
 *
 * @example
 * createWorker({ pool, tasks, logger: pino() });   // pino(fields, message)
 * createWorker({ pool, tasks, logger: console });  // console.warn(message, fields)
 */
export interface WorkerLogger {
  /** Something failed that a person should look at: a dead task, a worker error. */
  error(message: string, fields?: object): void;
  /** Something went wrong and was handled: a lost lease, a database outage and its end. */
  warn(message: string, fields?: object): void;
  /** Lifecycle news, when the logger has the level. */
  info?(message: string, fields?: object): void;
  /** Routine detail such as retries, when the logger has the level. */
  debug?(message: string, fields?: object): void;
}

type Level = 'error' | 'warn' | 'info' | 'debug';

/**
 * The worker's side of logging: one call per record, in whichever shape the logger takes, and a
 * database outage reported as one record when it starts and one when it ends.
 * @internal
 */
export class WorkerLog {
  readonly #logger: WorkerLogger | null;
  readonly #fieldsFirst: boolean;
  readonly #owner: string;
  /** When the running outage began (`performance.now()`), and how many failures it has seen. */
  #outage: { readonly since: number; failures: number } | undefined;

  constructor(logger: WorkerLogger | null, owner: string) {
    this.#logger = logger;
    this.#fieldsFirst = typeof (logger as { child?: unknown } | null)?.child === 'function';
    this.#owner = owner;
  }

  write(level: Level, message: string, fields: Record<string, unknown> = {}): void {
    if (level === 'debug' && this.#logger === console) return;
    const method = this.#logger?.[level] as ((first: unknown, second: unknown) => void) | undefined;
    if (typeof method !== 'function') return;
    const record = { owner: this.#owner, ...fields };
    try {
      if (this.#fieldsFirst) method.call(this.#logger, record, `[leasehold] ${message}`);
      else method.call(this.#logger, `[leasehold] ${message}`, record);
    } catch {
      // a logger that throws must not break the worker; it has nowhere to report to
    }
  }

  /** Task fields every task record carries. */
  task(task: Claimed<unknown>): Record<string, unknown> {
    const row = task as { name?: unknown; eventType?: unknown };
    const name = typeof row.name === 'string' ? row.name : typeof row.eventType === 'string' ? row.eventType : undefined;
    return { id: task.id, taskName: name, attempt: task.attempts, leaseVersion: task.leaseVersion };
  }

  /**
   * Reports a failure to reach the database: the first of an outage is logged (warn) with the
   * retry plan, the rest only counted. Returns false when `error` is not a connection failure.
   */
  unreachable(error: Error, retryPlan: string): boolean {
    if (!isConnectionFailure(error)) return false;
    if (this.#outage) {
      this.#outage.failures++;
      return true;
    }
    this.#outage = { since: performance.now(), failures: 1 };
    this.write('warn', `database unavailable (${error.message || errorCode(error) || 'no answer'}): ${retryPlan}`, { err: error });
    return true;
  }

  /**
   * The worker's statements wait for pool connections past the bound: the first report of an
   * episode is logged (warn), with what the pool says about its connections.
   */
  poolWaiting(wait: LongCheckout): void {
    if (!wait.first) return;
    const pool = wait.pool;
    const counts = pool ? ` (pool: ${pool.total} open${pool.max === undefined ? '' : ` of max ${pool.max}`}, ${pool.idle} idle, ${pool.waiting} checkouts waiting)` : '';
    this.write(
      'warn',
      `worker statements have waited ${(wait.waitedMs / 1000).toFixed(1)} s for a connection from the pool${counts}: ` +
        'claims, heartbeats and fenced writes wait until one is released, and leases run out unless heartbeats get through; ' +
        'handlers that hold pool connections (transactions, pool.connect()) can take them all: give the pool more connections than handlers hold at once',
      { waitedMs: wait.waitedMs, waiting: wait.waiting, pool },
    );
  }

  /** The pool hands the worker connections again: ends a reported episode with one record (info, else warn). */
  poolAvailable(ms: number): void {
    this.write(this.#logger?.info ? 'info' : 'warn', `pool connections reach the worker again after ${(ms / 1000).toFixed(1)} s of waiting`, {
      waitedMs: Math.round(ms),
    });
  }

  /** The database answered: ends a reported outage with one record (info, else warn). */
  reachable(): void {
    const outage = this.#outage;
    if (!outage) return;
    this.#outage = undefined;
    const seconds = ((performance.now() - outage.since) / 1000).toFixed(1);
    const message = `database available again after ${seconds} s (${outage.failures} failed attempt(s))`;
    this.write(this.#logger?.info ? 'info' : 'warn', message, { outageMs: Math.round(performance.now() - outage.since) });
  }
}

// Socket codes, SQLSTATE class 08 (connection exception), shutdowns and too many connections,
// and pg's own words for a connection that went away or never came.
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', '57P01', '57P02', '57P03', '53300']);
const CONNECTION_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|not queryable|Connection refused|connect ECONNREFUSED/i;

/** Whether `error` says the database could not be reached (or went away), not that a statement failed. @internal */
export function isConnectionFailure(error: Error): boolean {
  const code = errorCode(error);
  if (code !== undefined) return CONNECTION_CODES.has(code) || code.startsWith('08');
  return CONNECTION_MESSAGES.test(error.message);
}
