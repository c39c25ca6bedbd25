import { parseDuration, type Duration } from '../duration.js';
import { ConfigError, TaskFailedError, TaskNotFoundError, WaitTimeoutError } from '../errors.js';
import { taskTable, type LeasedTable } from '../leased-table.js';
import { taskAwaitEnd } from '../sql/task-read.js';
import type { PgPoolLike } from '../sql/transaction.js';
import { Listener } from '../worker/listener.js';
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
}

/**
 * Waits for a task to end and returns what its handler returned; rejects with `TaskFailedError`
 * when it ends dead or cancelled, `TaskNotFoundError` when there is no such task. Woken by
 * LISTEN/NOTIFY (the task's end notifies only because someone waits for it), never by polling:
 * one connection per pool and schema serves every wait, opened like the pool's own and closed
 * when the last wait ends. After that connection drops and comes back, every wait reads its
 * task again, so an end in between is not missed.
 *
 * @example
 * const handle = await enqueue(pool, resize, { url });
 * const { width } = await waitForResult(pool, handle, { timeout: '30s' });
 */
export async function waitForResult<R = unknown>(pool: PgPoolLike, task: string | TaskRef<R>, options: WaitForResultOptions = {}): Promise<R> {
  const id = taskId(task);
  const table = taskTable(options.schema);
  const timeoutMs = options.timeout === undefined ? undefined : parseDuration(options.timeout, 'timeout');
  const signal = options.signal;
  if (signal !== undefined && typeof signal.aborted !== 'boolean') throw new ConfigError('signal', 'Expected `signal` to be an AbortSignal');
  signal?.throwIfAborted();

  return new Promise<R>((resolve, reject) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    let leave: (() => void) | undefined;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      leave?.();
      settle();
    };
    const onAbort = () => finish(() => reject(signal!.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined) timer = setTimeout(() => finish(() => reject(new WaitTimeoutError(id, timeoutMs))), timeoutMs);

    // one read at a time; a notification during a read asks for one more
    let reading = false;
    let again = false;
    // every read marks the task awaited first (a no-op once marked): the first read may be one a
    // (re)connect asked for
    const read = async () => {
      if (done) return;
      if (reading) return void (again = true);
      reading = true;
      try {
        const end = await taskAwaitEnd(pool, table, id);
        if (end === undefined) return finish(() => reject(new TaskNotFoundError(id)));
        if (end.status === 'done') return finish(() => resolve(end.result as R));
        if (end.status === 'dead') return finish(() => reject(new TaskFailedError(id, 'dead', end.lastError)));
        if (end.status === 'cancelled') return finish(() => reject(new TaskFailedError(id, 'cancelled', end.resolution)));
      } catch (error) {
        return finish(() => reject(error));
      } finally {
        reading = false;
      }
      if (again) {
        again = false;
        await read();
      }
    };

    // listen first, then mark and read: an end after the read notifies a listening connection
    EndWatch.join(pool, table, id, () => void read()).then(
      (off) => {
        if (done) return off();
        leave = off;
        void read();
      },
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

/**
 * The one LISTEN connection that serves every `waitForResult` on a pool and task table: calls
 * the waiters of the id a notification names, or all of them after a reconnect.
 */
class EndWatch {
  static readonly #byPool = new WeakMap<PgPoolLike, Map<string, EndWatch>>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #listener: Listener;
  readonly #started: Promise<void>;
  readonly #close: () => void;

  private constructor(pool: PgPoolLike, table: LeasedTable<unknown>, close: () => void) {
    this.#close = close;
    // a lost connection is retried by the listener, which then calls every waiter once
    this.#listener = new Listener(pool, `${table.channel}:ended`, (payload) => this.#notify(payload), () => undefined);
    this.#started = this.#listener.start();
  }

  /** Adds a waiter for `id`; resolves once listening (or retrying) with the function that removes it. */
  static async join(pool: PgPoolLike, table: LeasedTable<unknown>, id: string, wake: () => void): Promise<() => void> {
    let watches = EndWatch.#byPool.get(pool);
    if (watches === undefined) EndWatch.#byPool.set(pool, (watches = new Map()));
    const key = table.channel;
    let watch = watches.get(key);
    if (watch === undefined) {
      const map = watches;
      watch = new EndWatch(pool, table, () => map.delete(key));
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
