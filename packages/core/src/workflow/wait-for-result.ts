import { parseDuration, type Duration } from '../duration.js';
import { ConfigError, TaskFailedError, TaskNotFoundError, toError, WaitTimeoutError } from '../errors.js';
import { taskTable, type LeasedTable } from '../leased-table.js';
import { taskAwaitEnd } from '../sql/task-read.js';
import { isUnprepared, noPreparedStatements } from '../sql/execute.js';
import type { PgPoolLike } from '../sql/transaction.js';
import { Listener } from '../worker/listener.js';
import { isConnectionFailure } from '../worker/worker-log.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';

/** Options of {@link waitForResult}. */
export interface WaitForResultOptions {
  /** Give up after this long with `WaitTimeoutError` (the task is untouched). @defaultValue no limit */
  timeout?: Duration;
  /** Give up when this fires, rejecting with its reason. */
  signal?: AbortSignal;
  /** Schema of the task table. @defaultValue 'leasehold' */
  schema?: string;
  /**
   * The pool reaches PostgreSQL through a pooler in transaction mode: send no named prepared
   * statements through it (this calls `noPreparedStatements()` on the pool), and read the task
   * every `pollInterval`, since LISTEN through the pooler never delivers; with
   * `listenConnectionString` too, a notification on it ends the wait sooner.
   * @defaultValue false, unless the pool was marked with `noPreparedStatements()`
   */
  noPreparedStatements?: boolean;
  /**
   * Behind a pooler: a connection string that reaches PostgreSQL directly, for the LISTEN
   * connection that wakes the wait as soon as the task ends (the pool's other settings apply).
   * @defaultValue none: behind a pooler the wait polls; otherwise it listens with the pool's settings
   */
  listenConnectionString?: string;
  /** Behind a pooler: how often the task is read again. @defaultValue '2s' */
  pollInterval?: Duration;
}

/** Longest pause between two reads of a wait's task while the database cannot be reached. */
const UNREACHABLE_RETRY_CAP_MS = 2_000;

const WAIT_OPTIONS = optionKeys<WaitForResultOptions>()('waitForResult', ['timeout', 'signal', 'schema', 'noPreparedStatements', 'listenConnectionString', 'pollInterval']);

/**
 * Waits for a task to end and returns what its handler returned; rejects with `TaskFailedError`
 * when it ends dead or cancelled, `TaskNotFoundError` when there is no such task. Woken by
 * LISTEN/NOTIFY (the task's end notifies only because someone waits for it), never by polling:
 * one connection per pool and schema serves every wait, opened like the pool's own and closed
 * when the last wait ends. After that connection drops and comes back, every wait reads its
 * task again, so an end in between is not missed. A read that fails because the database cannot
 * be reached (a restart, a failover) is tried again with backoff (at most 2 s apart) until it
 * answers: only `timeout` and `signal` end a wait early.
 *
 * @example
 * const handle = await enqueue(pool, resize, { url });
 * const { width } = await waitForResult(pool, handle, { timeout: '30s' });
 */
export async function waitForResult<R = unknown>(pool: PgPoolLike, task: string | TaskRef<R>, options: WaitForResultOptions = {}): Promise<R> {
  checkOptionKeys(options, WAIT_OPTIONS);
  const id = taskId(task);
  const table = taskTable(options.schema);
  const timeoutMs = options.timeout === undefined ? undefined : parseDuration(options.timeout, 'timeout');
  const signal = options.signal;
  if (signal !== undefined && typeof signal.aborted !== 'boolean') throw new ConfigError('signal', 'Expected `signal` to be an AbortSignal');
  const pooler = waitPooler(pool, options);
  signal?.throwIfAborted();

  return watchTask<R>(pool, table, id, 'ended', pooler, { timeoutMs, signal, onTimeout: () => ({ error: new WaitTimeoutError(id, timeoutMs!) }) }, async () => {
    // every read marks the task awaited first (a no-op once marked): the first read may be one a
    // (re)connect asked for
    const end = await taskAwaitEnd(pool, table, id);
    if (end === undefined) return { error: new TaskNotFoundError(id) };
    if (end.status === 'done') return { value: end.result as R };
    if (end.status === 'dead') return { error: new TaskFailedError(id, 'dead', end.lastError) };
    if (end.status === 'cancelled') return { error: new TaskFailedError(id, 'cancelled', end.resolution) };
    return undefined;
  });
}

/** How a {@link watchTask} ends: with a value, or with an error. @internal */
export type WatchEnd<R> = { readonly value: R; readonly error?: undefined } | { readonly value?: undefined; readonly error: unknown };

/**
 * Waits on one task until `read` says the wait is over: `read` runs at once, then again each time
 * the task notifies `<schema>.task:<topic>` with its id (and after the LISTEN connection comes
 * back, and every `pollMs` behind a pooler). One read at a time; a notification during a read asks
 * for one more. A read that fails because the database cannot be reached is tried again with
 * backoff (at most 2 s apart): only `timeoutMs` (ending with `onTimeout`) and `signal` end the
 * wait early. Shared by `waitForResult` (topic `ended`) and `getEvent` (topic `event`).
 * @internal
 */
export function watchTask<R>(
  pool: PgPoolLike,
  table: LeasedTable<unknown>,
  id: string,
  topic: string,
  pooler: WaitPooler,
  limits: { readonly timeoutMs: number | undefined; readonly signal: AbortSignal | undefined; readonly onTimeout: () => WatchEnd<R> },
  read: () => Promise<WatchEnd<R> | undefined>,
): Promise<R> {
  const { timeoutMs, signal } = limits;
  return new Promise<R>((resolve, reject) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    let poll: NodeJS.Timeout | undefined;
    let retry: NodeJS.Timeout | undefined;
    let unreachable = 0;
    let leave: (() => void) | undefined;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(poll);
      clearTimeout(retry);
      signal?.removeEventListener('abort', onAbort);
      leave?.();
      settle();
    };
    const end = (result: WatchEnd<R>) => finish(() => (result.error === undefined ? resolve(result.value as R) : reject(result.error)));
    const onAbort = () => finish(() => reject(signal!.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined) timer = setTimeout(() => end(limits.onTimeout()), timeoutMs);

    // one read at a time; a notification during a read asks for one more
    let reading = false;
    let again = false;
    const check = async () => {
      if (done) return;
      if (reading) return void (again = true);
      reading = true;
      try {
        const result = await read();
        unreachable = 0;
        if (result !== undefined) return end(result);
      } catch (error) {
        if (!isConnectionFailure(toError(error))) return finish(() => reject(error));
        // the database is out of reach: read again once it may be back (a reconnected LISTEN
        // connection reads at once too)
        clearTimeout(retry);
        retry = setTimeout(() => void check(), Math.min(UNREACHABLE_RETRY_CAP_MS, 100 * 2 ** ++unreachable) * (0.5 + Math.random() / 2));
        return;
      } finally {
        reading = false;
      }
      if (again) {
        again = false;
        await check();
      }
    };

    // behind a pooler, notifications reach only a direct connection, if one was given: the
    // wait reads its task every pollInterval whatever happens to that connection
    if (pooler.pollMs !== undefined) {
      poll = setInterval(() => void check(), pooler.pollMs);
      if (!pooler.listen) return void check();
    }
    // listen first, then read: a notification after the read reaches a listening connection
    TaskWatch.join(pool, table, topic, id, () => void check(), pooler.direct).then(
      (off) => {
        if (done) return off();
        leave = off;
        void check();
      },
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

/**
 * The one LISTEN connection that serves every wait of a topic (`ended`: `waitForResult`,
 * `event`: `getEvent`) on a pool and task table: calls the waiters of the id a notification
 * names, or all of them after a reconnect.
 */
class TaskWatch {
  static readonly #byPool = new WeakMap<PgPoolLike, Map<string, TaskWatch>>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #listener: Listener;
  readonly #started: Promise<void>;
  readonly #close: () => void;

  private constructor(pool: PgPoolLike, channel: string, close: () => void, direct: string | undefined) {
    this.#close = close;
    // a lost connection is retried by the listener, which then calls every waiter once
    this.#listener = new Listener(pool, channel, (payload) => this.#notify(payload), () => undefined, direct);
    this.#started = this.#listener.start();
  }

  /** Adds a waiter for `id`; resolves once listening (or retrying) with the function that removes it. */
  static async join(pool: PgPoolLike, table: LeasedTable<unknown>, topic: string, id: string, wake: () => void, direct: string | undefined): Promise<() => void> {
    let watches = TaskWatch.#byPool.get(pool);
    if (watches === undefined) TaskWatch.#byPool.set(pool, (watches = new Map()));
    const channel = `${table.channel}:${topic}`;
    const key = direct === undefined ? channel : `${channel} ${direct}`;
    let watch = watches.get(key);
    if (watch === undefined) {
      const map = watches;
      watch = new TaskWatch(pool, channel, () => map.delete(key), direct);
      watches.set(key, watch);
    }
    const joined = watch;
    let set = joined.#waiters.get(id);
    if (set === undefined) joined.#waiters.set(id, (set = new Set()));
    set.add(wake);
    await joined.#started;
    return () => joined.#leave(id, wake);
  }

  #leave(id: string, wake: () => void): void {
    const set = this.#waiters.get(id);
    set?.delete(wake);
    if (set?.size === 0) this.#waiters.delete(id);
    if (this.#waiters.size === 0) {
      this.#close();
      void this.#listener.stop(1_000);
    }
  }

  #notify(payload: string | undefined): void {
    const targets = payload === undefined ? [...this.#waiters.values()] : [this.#waiters.get(payload) ?? new Set<() => void>()];
    for (const set of targets) for (const wake of [...set]) wake();
  }
}

/** How a wait learns of its task's news: see {@link waitPooler}. @internal */
export interface WaitPooler {
  readonly listen: boolean;
  readonly direct: string | undefined;
  readonly pollMs: number | undefined;
}

/**
 * How a wait learns of its task's news: LISTEN on the pool's settings (no pooler), or behind a
 * pooler a read every `pollMs`, plus LISTEN on `direct` when given.
 * @internal
 */
export function waitPooler(pool: PgPoolLike, options: Pick<WaitForResultOptions, 'noPreparedStatements' | 'listenConnectionString' | 'pollInterval'>): WaitPooler {
  const { noPreparedStatements: unnamed, listenConnectionString: direct } = options;
  if (unnamed !== undefined && typeof unnamed !== 'boolean') throw new ConfigError('noPreparedStatements', 'Expected `noPreparedStatements` to be true or false');
  if (direct !== undefined && (typeof direct !== 'string' || direct.length === 0)) {
    throw new ConfigError('listenConnectionString', 'Expected `listenConnectionString` to be a connection string such as postgres://app@db-host:5432/app');
  }
  const pollMs = parseDuration(options.pollInterval ?? '2s', 'pollInterval');
  if (unnamed === true) noPreparedStatements(pool);
  if (!isUnprepared(pool)) return { listen: true, direct, pollMs: undefined };
  return { listen: direct !== undefined, direct, pollMs };
}
