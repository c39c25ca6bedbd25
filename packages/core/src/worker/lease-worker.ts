import { EventEmitter } from 'eventemitter3';
import { parseDuration, type Duration } from '../duration.js';
import { HandlerTimeoutError, LeaseLostError, ShutdownError, toError } from '../errors.js';
import { classifyOutcome } from '../outcome.js';
import { leaseClaim } from '../sql/lease-claim.js';
import { leaseExtendMany } from '../sql/lease-extend-many.js';
import type { FinalizeResult } from '../sql/lease-finalize-many.js';
import { tokenKey, type Claimed } from '../sql/lease-row.js';
import type { LeaseToken } from '../primitives.js';
import { toReleased, type Transition } from '../transition.js';
import { transitionFor } from '../transition-for.js';
import { checkDatabase, describeTarget } from './check-database.js';
import { DatabaseNotReadyError } from './database-not-ready-error.js';
import { safeEmit, type WorkerEventMap } from './events.js';
import { Finalizer, type CommitHook } from './finalizer.js';
import type { HandlerContext } from './handler-context.js';
import { Heartbeat } from './heartbeat.js';
import { normalizeLeaseWorkerOptions, type LeaseWorkerOptions, type NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import { Listener } from './listener.js';
import { emitOutcome } from './outcome-event.js';
import { runUntilAborted } from './run-handler.js';
import type { RunSettings } from './settings.js';
import { settlesBy } from './settles-by.js';
import { TrackedPool } from './tracked-pool.js';
import { Wakeup } from './wakeup.js';
import { WorkerLog } from './worker-log.js';

/**
 * How long a stop waits, past its `timeout`, for the database to answer the writes that give
 * tasks back (and for the LISTEN connection to close) before it abandons them.
 */
const STOP_GRACE_MS = 500;
/** After abandoning, what was cut fails at once; this only bounds a pool that cannot be cut. */
const ABANDON_SETTLE_MS = 100;
/** How long `start()` waits for the database to answer its check. */
const START_CHECK_TIMEOUT_MS = 10_000;

interface InFlight<Row> {
  readonly task: Claimed<Row>;
  readonly settings: RunSettings;
  readonly controller: AbortController;
  readonly hooks: CommitHook[];
  startedAt: number;
  /** The handler is done and its fenced write is under way: that write's result decides. */
  writing: boolean;
}

/** Options of {@link LeaseWorker.stop}. */
export interface StopOptions {
  /**
   * Let running handlers finish for this long, then abort them and release their tasks. `stop()`
   * returns at most half a second later whatever the database does: writes it has not answered
   * by then are abandoned (see `worker:abandoned`). @defaultValue '30s'
   */
  timeout?: Duration;
}

/**
 * Runs handlers for the rows of one leased table: claims only what its free slots (plus its
 * small prefetch buffer) can take, runs each handler outside any transaction, keeps leases alive
 * with one batched heartbeat statement per tick, classifies what handlers throw and writes the
 * results with the fence, batched. A slot frees as soon as its handler returns; the fenced
 * write follows in the background. Wakes on LISTEN/NOTIFY, polls as a fallback, and rides out
 * database outages by backing off.
 *
 * @example
 * const worker = createLeaseWorker({ pool, table: outboxTable(), handle: async (row) => send(row) });
 * await worker.start();
 * process.once('SIGTERM', () => void worker.stop({ timeout: '10s' }));
 */
export class LeaseWorker<Row> extends EventEmitter<WorkerEventMap<Row>> {
  readonly owner: string;
  readonly #o: NormalizedLeaseWorkerOptions<Row>;
  /**
   * Claimed and not yet finalized: buffered, running or being written. Keyed by id and token:
   * the same id may be claimed again (by this worker) while its previous claim is still
   * being written, and the two must not be confused.
   */
  readonly #inFlight = new Map<string, InFlight<Row>>();
  /** Claimed, waiting for a free slot. */
  readonly #buffer: InFlight<Row>[] = [];
  /** Each claimed task's whole life (handler, then fenced write). */
  readonly #lives = new Set<Promise<void>>();
  readonly #wakeup = new Wakeup();
  /** The pool, as the worker's own statements use it: what is in flight can be cut at a stop. */
  readonly #db: TrackedPool;
  readonly #finalizer: Finalizer;
  readonly #heartbeat: Heartbeat;
  readonly #listener: Listener | undefined;
  readonly #log: WorkerLog;
  #handlers = 0;
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #starting: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #idle = false;
  readonly #onPoolError = (error: Error) => this.#error(error);

  constructor(options: LeaseWorkerOptions<Row>) {
    super();
    this.#o = normalizeLeaseWorkerOptions(options);
    this.owner = this.#o.owner;
    this.#log = new WorkerLog(this.#o.logger, this.owner);
    const { pool, table } = this.#o;
    this.#db = new TrackedPool(pool);
    this.#finalizer = new Finalizer(this.#db, table, (error) => this.#error(error));
    this.#heartbeat = new Heartbeat({
      executor: this.#db,
      table,
      intervalMs: this.#o.heartbeatIntervalMs,
      inFlight: () => [...this.#inFlight.values()].map((f) => ({ id: f.task.id, leaseVersion: f.task.leaseVersion, leaseMs: f.settings.leaseMs })),
      // a tick that raced a task's own fenced write is no news: the write reports the truth
      onLost: (token) => this.#inFlight.get(tokenKey(token))?.writing || this.#leaseLost(token),
      onError: (error) => this.#db.abandoned || safeEmit(this, 'heartbeat:failed', { error }),
    });
    this.#listener = this.#o.listen
      ? new Listener(pool, table.channel, () => this.#wakeup.wake(), (error) => this.#error(error))
      : undefined;
  }

  /** Tasks this worker holds a lease on now (buffered, running, or being finalized). */
  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  /** Tasks whose handler is done and whose fenced write is under way. */
  get #writing(): number {
    return this.#inFlight.size - this.#handlers - this.#buffer.length;
  }

  /** Handlers running now (at most `concurrency`). */
  get runningCount(): number {
    return this.#handlers;
  }

  /**
   * Checks the database, then starts claiming. Rejects with a {@link DatabaseNotReadyError} that
   * says what to do when the database cannot be reached (or does not answer within 10 s), does
   * not exist, refuses the login, or its schema is not migrated or is behind; the worker can then
   * be started again. Resolves once the worker claims, or once a `stop()` called meanwhile has
   * ended the start: then the worker never claims and never emits `worker:started`.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker ${this.owner} was already started`);
    this.#state = 'running';
    this.#db.open();
    onPoolError(this.#o.pool, this.#onPoolError, 'on');
    try {
      await (this.#starting = this.#begin());
    } catch (error) {
      if (this.#state !== 'running') return; // stop() interrupted the start, and cleans up
      this.#db.abandon(); // a check the database never answered
      this.#db.close();
      onPoolError(this.#o.pool, this.#onPoolError, 'off');
      this.#starting = undefined;
      this.#state = 'new';
      throw error;
    }
  }

  async #begin(): Promise<void> {
    await this.#checkDatabase();
    if (this.#state !== 'running') return; // stop() began meanwhile, and cleans up
    await this.#listener?.start();
    if (this.#state !== 'running') return;
    this.#heartbeat.start();
    this.#loop = this.#claimLoop();
    safeEmit(this, 'worker:started', { owner: this.owner });
  }

  async #checkDatabase(): Promise<void> {
    const target = describeTarget(this.#o.pool);
    const check = checkDatabase(this.#db, this.#o.table, this.#o.migrationLines, target);
    if (await settlesBy(check, performance.now() + START_CHECK_TIMEOUT_MS)) return check;
    check.catch(() => undefined); // cut when the start is undone
    throw new DatabaseNotReadyError('unreachable', `cannot use ${target}: no answer within ${START_CHECK_TIMEOUT_MS / 1000} s`);
  }

  /**
   * Stops claiming, gives back buffered tasks, lets running handlers finish for up to
   * `timeout`, then aborts the rest (their signal fires with `ShutdownError`) and returns their
   * tasks to pending with the attempt refunded. Resolves within `timeout` plus half a second
   * whatever the database does: what it has not answered by then is abandoned (reported as
   * `worker:abandoned`; those tasks come back when their lease expires, as after a crash), and no
   * timer or connection of the worker is left. Idempotent; safe before and during `start()`.
   */
  stop(options: StopOptions = {}): Promise<void> {
    const timeoutMs = parseDuration(options.timeout ?? '30s', 'timeout', { allowZero: true });
    if (this.#state === 'new') this.#state = 'stopped';
    if (this.#state === 'stopped' && !this.#stopping) return Promise.resolve();
    return (this.#stopping ??= this.#shutdown(timeoutMs));
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    this.#state = 'stopping';
    const handlersUntil = performance.now() + timeoutMs;
    const databaseUntil = handlersUntil + STOP_GRACE_MS;
    this.#wakeup.wake();
    // also ends a connection attempt that start() may still be waiting for
    const listenerClosed = this.#listener?.stop(STOP_GRACE_MS);
    for (const f of this.#buffer.splice(0)) {
      f.controller.abort(new ShutdownError()); // never started: straight back to pending
      this.#live(f);
    }
    await settlesBy(this.#drained(), handlersUntil);
    for (const f of this.#inFlight.values()) f.controller.abort(new ShutdownError());
    const settled = Promise.all([this.#settle(), listenerClosed]);
    if (!(await settlesBy(settled, databaseUntil))) await this.#abandon(settled);
    this.#db.close();
    onPoolError(this.#o.pool, this.#onPoolError, 'off');
    this.#state = 'stopped';
    safeEmit(this, 'worker:stopped', { owner: this.owner });
  }

  /** Everything after the handlers: the start, the claim loop, the writes, the last heartbeat. */
  async #settle(): Promise<void> {
    await this.#starting?.catch(() => undefined); // a start that failed has nothing to settle
    await this.#loop;
    await this.#drained();
    await this.#heartbeat.stop();
    await this.#finalizer.idle();
  }

  /** Resolves when no task is left (tasks claimed meanwhile included). */
  async #drained(): Promise<void> {
    while (this.#lives.size > 0) await Promise.all(this.#lives);
  }

  // The database did not answer in time: cut what waits on it, so that stop returns and holds
  // nothing. The tasks whose writes were cut stay `processing` under our token until their
  // lease expires; then they are claimed again, as after a crash (the fence makes a write that
  // did land before the cut harmless).
  async #abandon(settled: Promise<unknown>): Promise<void> {
    const tasks = [...this.#inFlight.values()].map((f) => f.task);
    const connections = this.#db.abandon();
    this.#finalizer.abandon();
    this.#heartbeat.stop().catch(() => undefined);
    await settlesBy(settled, performance.now() + ABANDON_SETTLE_MS);
    const ids = tasks.map((t) => t.id).join(', ');
    this.#log.write(
      'warn',
      `worker ${this.owner} stopped without an answer from the database: ` +
        `${tasks.length} task(s) abandoned${tasks.length > 0 ? ` (ids ${ids})` : ''}, ${connections} connection(s) cut; ` +
        'abandoned tasks run again once their lease expires',
      { taskIds: tasks.map((t) => t.id), connections },
    );
    safeEmit(this, 'worker:abandoned', { owner: this.owner, tasks, connections });
  }

  async #claimLoop(): Promise<void> {
    let failures = 0;
    while (this.#state === 'running') {
      // Tasks whose fenced write is still queued hold capacity beyond one round of
      // `concurrency`: claims must not outrun the writes, or leases would run out unwritten.
      const room = this.#o.concurrency + this.#o.prefetch - this.#handlers - this.#buffer.length - Math.max(0, this.#writing - this.#o.concurrency);
      if (room <= 0) {
        await this.#wakeup.wait(this.#o.pollIntervalMs);
        continue;
      }
      const want = Math.min(room, this.#o.batch);
      let claimed: Claimed<Row>[];
      try {
        const result = await leaseClaim(this.#db, this.#o.table, {
          owner: this.owner,
          batch: want,
          leaseMs: this.#o.settings.leaseMs,
          names: this.#o.names,
          leaseMsByName: this.#o.leaseMsByName,
        });
        failures = 0;
        this.#log.reachable();
        for (const reaped of result.reaped) safeEmit(this, 'task:reaped', reaped);
        claimed = result.claimed;
      } catch (error) {
        this.#error(toError(error));
        if (this.#state !== 'running') break;
        failures++;
        // back off (with jitter) while the database is unreachable, then try again
        await this.#wakeup.wait(Math.min(this.#o.pollIntervalMs, 50 * 2 ** failures) * (0.5 + Math.random() / 2));
        continue;
      }
      for (const task of claimed) this.#accept(task);
      if (claimed.length === want) continue; // there may be more waiting
      if (claimed.length === 0 && this.#inFlight.size === 0 && !this.#idle) {
        this.#idle = true;
        safeEmit(this, 'worker:idle', { owner: this.owner });
      }
      await this.#wakeup.wait(this.#o.pollIntervalMs);
    }
  }

  /** Takes charge of a claimed task: runs it now if a slot is free, else buffers it. */
  #accept(task: Claimed<Row>): void {
    this.#idle = false;
    const f: InFlight<Row> = {
      task,
      settings: this.#o.settingsFor(task),
      controller: new AbortController(),
      hooks: [],
      startedAt: 0,
      writing: false,
    };
    this.#inFlight.set(tokenKey(task), f);
    safeEmit(this, 'task:claimed', { task });
    if (this.#state !== 'running') {
      f.controller.abort(new ShutdownError());
      this.#live(f);
    } else if (this.#handlers < this.#o.concurrency) {
      this.#live(f);
    } else {
      this.#buffer.push(f);
    }
  }

  #live(f: InFlight<Row>): void {
    const life = this.#life(f).catch((error: unknown) => this.#error(toError(error)));
    this.#lives.add(life);
    void life.finally(() => this.#lives.delete(life));
  }

  /** One task: its handler in a slot, then (slot already free) its fenced write. */
  async #life(f: InFlight<Row>): Promise<void> {
    try {
      const { thrown, threw } = await this.#runHandler(f);
      f.writing = true;
      await this.#finish(f, thrown, threw);
    } finally {
      this.#inFlight.delete(tokenKey(f.task));
      // the next task of an ordered group becomes claimable only now; and a write that held
      // back claims (see the claim loop) frees capacity
      if (f.task.groupKey !== null || this.#writing >= this.#o.concurrency) this.#wakeup.wake();
    }
  }

  async #runHandler(f: InFlight<Row>): Promise<{ thrown: unknown; threw: boolean }> {
    if (f.controller.signal.aborted) return { thrown: f.controller.signal.reason, threw: true };
    this.#handlers++;
    f.startedAt = performance.now();
    const timeoutMs = f.settings.handlerTimeoutMs;
    const timer = timeoutMs === null ? undefined : setTimeout(() => f.controller.abort(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    try {
      await runUntilAborted(() => this.#o.handle(f.task, this.#context(f)), f.controller.signal);
      return { thrown: undefined, threw: false };
    } catch (error) {
      return { thrown: error, threw: true };
    } finally {
      clearTimeout(timer);
      this.#handlers--;
      // the slot is free now: hand it to a buffered task, and let the loop refill the buffer
      const next = this.#state === 'running' ? this.#buffer.shift() : undefined;
      if (next) this.#live(next);
      this.#wakeup.wake();
    }
  }

  async #finish(f: InFlight<Row>, thrown: unknown, threw: boolean): Promise<void> {
    const { task, settings } = f;
    const reason: unknown = f.controller.signal.aborted ? f.controller.signal.reason : undefined;
    if (reason instanceof LeaseLostError) return; // reported when it was detected; write nothing
    if (reason instanceof ShutdownError) {
      await this.#giveBack(f);
      return;
    }
    const outcome = classifyOutcome(threw && reason !== undefined ? reason : thrown, threw);
    const transition = transitionFor(outcome, task, settings.policy);
    if (transition === null) {
      this.#leaseLost(task);
      return;
    }
    const result = await this.#write(f, transition);
    if (result.won) emitOutcome(this, this.#log, task, outcome, transition, result.status, performance.now() - f.startedAt);
  }

  /** Writes a fenced transition; a refusal is reported as a lost lease. */
  async #write(f: InFlight<Row>, transition: Transition): Promise<FinalizeResult> {
    const item = { id: f.task.id, leaseVersion: f.task.leaseVersion, transition, groupKey: f.task.groupKey };
    const result =
      transition.to === 'done' && f.hooks.length > 0
        ? await this.#finalizer.submitWithHooks(item, f.hooks)
        : await this.#finalizer.submit(item);
    if (!result.won) {
      const error = new LeaseLostError(f.task.id, f.task.leaseVersion, `finalize refused: task ${f.task.id} lease_version ${f.task.leaseVersion} moved on`);
      this.#reportLeaseLost(f.task, error);
    }
    return result;
  }

  /** Returns an unfinished task to pending, attempt refunded (the worker is stopping). */
  async #giveBack(f: InFlight<Row>): Promise<void> {
    const result = await this.#write(f, toReleased('released by a stopping worker'));
    if (result.won) safeEmit(this, 'task:released', { task: f.task });
  }

  #context(f: InFlight<Row>): HandlerContext {
    return {
      signal: f.controller.signal,
      extendLease: async (lease?: Duration) => {
        const leaseMs = lease === undefined ? f.settings.leaseMs : parseDuration(lease, 'lease');
        const extended = await leaseExtendMany(this.#db, this.#o.table, [
          { id: f.task.id, leaseVersion: f.task.leaseVersion, leaseMs },
        ]);
        if (!extended.has(tokenKey(f.task))) {
          this.#leaseLost(f.task);
          throw f.controller.signal.reason as LeaseLostError;
        }
      },
      onCommit: (hook) => void f.hooks.push(hook),
    };
  }

  #leaseLost(token: LeaseToken): void {
    const f = this.#inFlight.get(tokenKey(token));
    if (!f || f.controller.signal.aborted) return;
    const error = new LeaseLostError(token.id, token.leaseVersion);
    f.controller.abort(error);
    this.#reportLeaseLost(f.task, error);
  }

  // The effect may already have happened; whoever owns the task now repeats it, and the task id
  // lets downstream deduplicate. Never silent: an event, and a log line.
  #reportLeaseLost(task: Claimed<Row>, error: LeaseLostError): void {
    this.#log.write('warn', `lost lease: ${error.message}`, { ...this.#log.task(task), err: error });
    safeEmit(this, 'task:lease-lost', { task, error });
  }

  // An outage is logged once when it starts and once when it ends (the next claim that answers),
  // not once per failed poll; the event still fires each time.
  #error(error: Error): void {
    if (this.#db.abandoned) return; // what a stop cut fails as it should: no news
    const plan = `claims retry with backoff up to ${this.#o.pollIntervalMs} ms until it answers; running tasks keep their leases only while it answers heartbeats`;
    if (!this.#log.unreachable(error, plan)) this.#log.write('error', `worker error: ${error.message}`, { err: error });
    safeEmit(this, 'worker:error', { error });
  }
}

/** Creates a {@link LeaseWorker}; options are checked here, before anything touches the database. */
export function createLeaseWorker<Row>(options: LeaseWorkerOptions<Row>): LeaseWorker<Row> {
  return new LeaseWorker(options);
}

// A pg Pool emits 'error' for idle clients whose connection dies; unhandled, that would crash
// the process during a database restart. The worker reports it instead while it runs.
function onPoolError(pool: object, listener: (error: Error) => void, mode: 'on' | 'off'): void {
  const emitter = pool as { on?: (e: 'error', l: (error: Error) => void) => void; off?: (e: 'error', l: (error: Error) => void) => void };
  if (mode === 'on') emitter.on?.('error', listener);
  else emitter.off?.('error', listener);
}
