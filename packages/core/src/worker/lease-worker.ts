import { EventEmitter } from 'eventemitter3';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { parseDuration, type Duration } from '../duration.js';
import { WorkerStateError } from '../errors.js';
import { checkDatabase, describeTarget } from './check-database.js';
import { claimLoop } from './claim-loop.js';
import { ClaimSizing } from './claim-sizing.js';
import { DatabaseNotReadyError } from './database-not-ready-error.js';
import { safeEmit, type WorkerEventMap } from './events.js';
import { Finalizer } from './finalizer.js';
import { warmPool } from './pool-warmup.js';
import type { StepRecorder } from '../workflow/step-recorder.js';
import { Heartbeat } from './heartbeat.js';
import { normalizeLeaseWorkerOptions, type LeaseWorkerOptions, type NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import { Listener } from './listener.js';
import { TimedWake } from './timed-wake.js';
import { poolerHint, probeListenPath } from './listen-probe.js';
import { noPreparedStatements } from '../sql/execute.js';
import type { Claimed } from '../sql/lease-row.js';
import { limitRegisterMany } from '../sql/limit-register-many.js';
import { RetentionRunner } from '../retention/retention-runner.js';
import { WorkerPresence } from './worker-presence.js';
import { logRetention } from '../retention/retention-log.js';
import { settlesBy } from './settles-by.js';
import { TaskRunner } from './task-runner.js';
import { TrackedPool } from './tracked-pool.js';
import { WakeGuard } from './wake-guard.js';
import { Wakeup } from './wakeup.js';
import { WorkerLog } from './worker-log.js';
import { shutDown } from './worker-shutdown.js';

/** How long a stop waits, after the rest, for a retention batch in flight and the worker-list delete before cutting them. */
const RETENTION_STOP_MS = 500;

/** Options of {@link LeaseWorker.stop}. */
export interface StopOptions {
  /**
   * Let running handlers finish for this long, then abort them and release their tasks. `stop()`
   * returns at most half a second later whatever the database does: writes it has not answered
   * by then are abandoned (see `worker:abandoned`). @defaultValue '30s'
   */
  timeout?: Duration;
}

const STOP_OPTIONS = optionKeys<StopOptions>()('worker.stop', ['timeout']);

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
  readonly #wakeup = new Wakeup();
  /** Wakes the claim loop when something comes due that no notification announces. */
  readonly #timer = new TimedWake(this.#wakeup);
  /** The pool, as the worker's own statements use it: what is in flight can be cut at a stop. */
  readonly #db: TrackedPool;
  readonly #finalizer: Finalizer;
  readonly #runner: TaskRunner<Row>;
  readonly #sizing: ClaimSizing;
  readonly #heartbeat: Heartbeat;
  readonly #listener: Listener | undefined;
  /** This worker's share of deleting old finished rows, when it takes part. */
  readonly #retention: RetentionRunner | undefined;
  /** This worker's row in the worker list, when its rows have versions (core's task table). */
  readonly #presence: WorkerPresence | undefined;
  /** The listener's errors while a start checks the database (see `#begin`), or undefined. */
  #startErrors: Error[] | undefined;
  readonly #log: WorkerLog;
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  /** The limits this worker claims rows under, once recorded at start. */
  #flows: readonly string[] | undefined;
  #starting: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #stepRecorder: StepRecorder | undefined;
  #unpairSteps: (() => void) | undefined;
  readonly #onPoolError = (error: Error) => this.#error(error);
  readonly #running = () => this.#state === 'running';

  constructor(options: LeaseWorkerOptions<Row>) {
    super();
    this.#o = normalizeLeaseWorkerOptions(options);
    this.owner = this.#o.owner;
    this.#log = new WorkerLog(this.#o.logger, this.owner);
    const { pool, table } = this.#o;
    this.#db = new TrackedPool(pool, {
      // a heartbeat that waits longer than its interval is late: say so
      boundMs: this.#o.heartbeatIntervalMs,
      onLong: (wait) => {
        this.#log.poolWaiting(wait);
        safeEmit(this, 'pool:waiting', { waitedMs: wait.waitedMs, waiting: wait.waiting, pool: wait.pool });
      },
      onClear: (ms) => this.#log.poolAvailable(ms),
    });
    this.#finalizer = new Finalizer(this.#db, table, (error) => this.#error(error));
    const o = this.#o;
    this.#sizing = new ClaimSizing(o);
    this.#runner = new TaskRunner({
      options: o,
      db: this.#db,
      finalizer: this.#finalizer,
      log: this.#log,
      emitter: this,
      onSlotFree: (ms) => {
        this.#sizing.observe(ms);
        // a refill is due once the buffer is down to its low-water mark (or a slot idles)
        if (this.#runner.buffered <= this.#sizing.lowWater) this.#wakeup.wake();
      },
      onWritten: (task) => {
        // the next task of an ordered group becomes claimable only now, as does a slot of a
        // limit (when the worker claims under any); and a write that held back claims (see
        // ClaimSizing.want) frees capacity
        const held = task.groupKey !== null || (this.#flows !== undefined && this.#flows.length > 0);
        if (held || this.#runner.writing >= o.concurrency + this.#sizing.prefetch) this.#wakeup.wake();
      },
      onDue: (ms) => {
        // a stopped worker's last writes arm nothing: the timer is cleared as its loop ends
        if (this.#state === 'running') this.#timer.dueIn(ms);
      },
      running: this.#running,
      onError: (error) => this.#error(error),
    });
    // the next heads of the groups this worker's writes finish: taken in the same transaction
    // when its own claim could take them, with the room it has then (bench/RESULTS.md, issue 35)
    this.#finalizer.takeHeads({
      request: () =>
        this.#state !== 'running'
          ? undefined
          : {
              owner: o.owner,
              leaseMs: o.settings.leaseMs,
              leaseMsByName: o.leaseMsByName,
              names: o.names,
              versions: o.versions,
              max: this.#sizing.room(this.#runner),
            },
      take: (rows) => this.#runner.acceptAll(rows as Claimed<Row>[]),
    });
    this.#heartbeat = new Heartbeat({
      executor: this.#db,
      table,
      intervalMs: this.#o.heartbeatIntervalMs,
      inFlight: () => this.#runner.leases(),
      onLost: (token, cancelled) => this.#runner.heartbeatLost(token, cancelled),
      onError: (error) => this.#db.abandoned || safeEmit(this, 'heartbeat:failed', { error }),
    });
    this.#listener = this.#o.listen
      ? new Listener(pool, table.channel, () => this.#wakeup.wake(), (error) => (this.#startErrors ? this.#startErrors.push(error) : this.#error(error)), this.#o.listenConnectionString)
      : undefined;
    this.#retention = this.#o.retention === undefined ? undefined : new RetentionRunner({
      db: this.#db,
      table,
      owner: this.owner,
      settings: this.#o.retention,
      onPurged: (report) => {
        logRetention(this.#log, report);
        safeEmit(this, 'retention:purged', report);
      },
      onError: (error) => this.#error(error),
    });
    this.#presence = this.#o.versions === undefined ? undefined : new WorkerPresence(this.#db, table, this.owner, this.#o.versions.byName, (error) => this.#error(error));
    // behind a pooler, the worker's own statements are not named either (the pool is marked)
    if (this.#o.pooled) noPreparedStatements(this.#db);
  }

  /** Tasks this worker holds a lease on now (buffered, running, or being finalized). */
  get inFlightCount(): number {
    return this.#runner.inFlight;
  }

  /** Handlers running now (at most `concurrency`). */
  get runningCount(): number {
    return this.#runner.running;
  }

  /**
   * The worker's workflow runs queue their step records in `recorder`: its completions and their
   * records then share statements (see `Finalizer.combineWith`), from start to stop. Core's task
   * worker. @internal
   */
  protected recordStepsWith(recorder: StepRecorder): void {
    this.#stepRecorder = recorder;
  }

  /**
   * Checks the database, then starts claiming. Rejects with a {@link DatabaseNotReadyError} that
   * says what to do when the database cannot be reached (or does not answer within
   * `startTimeout`, 10 s by default), does
   * not exist, refuses the login, or its schema is not migrated or is behind; the worker can then
   * be started again. Resolves once the worker claims, or once a `stop()` called meanwhile has
   * ended the start: then the worker never claims and never emits `worker:started`. A worker
   * that started (or was stopped) starts no more: `start()` rejects with a `WorkerStateError`.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new WorkerStateError('worker', this.owner, this.#state);
    this.#state = 'running';
    if (this.#stepRecorder !== undefined) this.#unpairSteps = this.#finalizer.combineWith(this.#stepRecorder);
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
      this.#unpairSteps?.();
      this.#state = 'new';
      throw error;
    }
  }

  async #begin(): Promise<void> {
    // The LISTEN connection opens while the database is checked: a connection's start-up is the
    // longest step before the first claim (some 5 ms here). It never throws (a failed connect is
    // retried in the background), and its errors wait for the check: a start that fails says
    // why once, in the error it throws.
    const startErrors: Error[] = (this.#startErrors = []);
    const listening = this.#listener?.start();
    try {
      await this.#checkDatabase();
      // the connections the first tasks' writes will use open meanwhile, and while the first
      // claims go out on the LISTEN connection: waited for, they held back the first claim (see warmPool)
      void warmPool(this.#db, (this.#o.pool as { options?: { max?: number } }).options?.max, this.#o.table);
      // with an OpenTelemetry SDK registered, every task claimed from now on is instrumented
      await this.#runner.loadTelemetry();
      if (this.#state !== 'running') return; // stop() began meanwhile, and cleans up
      await this.#registerLimits();
      // behind a pooler: do notifications sent through the pool reach the LISTEN connection?
      if (this.#o.pooled && this.#listener !== undefined && this.#state === 'running') {
        await listening;
        await probeListenPath(this.#listener, this.#db, startErrors);
      }
    } catch (error) {
      // the start is undone (see start()): no connection or retry timer of it is left
      if (this.#state === 'running') await this.#listener?.stop(0);
      throw error;
    } finally {
      this.#startErrors = undefined; // one start at a time: start() refuses a second
    }
    for (const error of startErrors) this.#error(error);
    if (this.#state !== 'running') return;
    await listening;
    if (this.#state !== 'running') return;
    this.#heartbeat.start();
    this.#loop = claimLoop({
      options: this.#o,
      db: this.#db,
      runner: this.#runner,
      sizing: this.#sizing,
      guard: new WakeGuard({
        db: this.#db,
        table: this.#o.table,
        wakeup: this.#wakeup,
        pollIntervalMs: this.#o.pollIntervalMs,
        listening: () => this.#listener?.listening ?? false,
        run: this.#listener === undefined ? undefined : (statement) => this.#listener?.run(statement),
        running: this.#running,
        onError: (error) => this.#error(error),
      }),
      listener: this.#listener,
      wakeup: this.#wakeup,
      timer: this.#timer,
      log: this.#log,
      emitter: this,
      flows: () => this.#flows,
      running: this.#running,
      onError: (error) => this.#error(error),
    });
    this.#retention?.start();
    this.#presence?.start();
    safeEmit(this, 'worker:started', { owner: this.owner });
  }

  /**
   * Records the limits of this worker's rows (a bound changed in code applies from now on) and
   * learns which limits its claims take rows under (see `limitRegisterMany`).
   */
  async #registerLimits(): Promise<void> {
    const { table, limits, names } = this.#o;
    if (table.limitTable === undefined) return;
    this.#flows = await limitRegisterMany(this.#db, table, this.owner, limits, names ?? []);
  }

  async #checkDatabase(): Promise<void> {
    const target = describeTarget(this.#o.pool);
    const check = checkDatabase(this.#db, this.#o.table, this.#o.migrationLines, target);
    const { startTimeoutMs } = this.#o;
    if (await settlesBy(check, performance.now() + startTimeoutMs)) return check;
    check.catch(() => undefined); // cut when the start is undone
    throw new DatabaseNotReadyError('unreachable', `cannot use ${target}: no answer within ${startTimeoutMs / 1000} s (the worker's \`startTimeout\`)`);
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
    checkOptionKeys(options, STOP_OPTIONS);
    const timeoutMs = parseDuration(options.timeout ?? '30s', 'timeout', { allowZero: true });
    if (this.#state === 'new') this.#state = 'stopped';
    if (this.#state === 'stopped' && !this.#stopping) return Promise.resolve();
    return (this.#stopping ??= this.#shutdown(timeoutMs));
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    this.#state = 'stopping';
    // no new batch starts; the one in flight (a short DELETE) is waited for below
    const retentionStopped = this.#retention?.stop();
    await shutDown(
      {
        owner: this.owner,
        runner: this.#runner,
        listener: this.#listener,
        db: this.#db,
        finalizer: this.#finalizer,
        heartbeat: this.#heartbeat,
        wakeup: this.#wakeup,
        log: this.#log,
        emitter: this,
        starting: () => this.#starting,
        loop: () => this.#loop,
      },
      timeoutMs,
    );
    // the worker's row goes once it has stopped, unless the stop had to cut the connections
    const presenceGone = this.#db.abandoned ? undefined : this.#presence?.stop();
    const tail = [retentionStopped, presenceGone].filter((p) => p !== undefined);
    if (tail.length > 0 && !(await settlesBy(Promise.all(tail), performance.now() + RETENTION_STOP_MS))) this.#db.abandon();
    this.#db.close();
    onPoolError(this.#o.pool, this.#onPoolError, 'off');
    this.#unpairSteps?.();
    this.#state = 'stopped';
    safeEmit(this, 'worker:stopped', { owner: this.owner });
  }

  // An outage is logged once when it starts and once when it ends (the next claim that answers),
  // not once per failed poll; the event still fires each time.
  #error(error: Error): void {
    if (this.#db.abandoned) return; // what a stop cut fails as it should: no news
    const plan = `claims retry with backoff up to ${this.#o.pollIntervalMs} ms until it answers; running tasks keep their leases only while it answers heartbeats`;
    if (!this.#log.unreachable(error, plan)) this.#log.write('error', `worker error: ${error.message}${poolerHint(error)}`, { err: error });
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
