import { EventEmitter } from 'eventemitter3';
import { parseDuration, type Duration } from '../duration.js';
import { HandlerTimeoutError, LeaseLostError, ShutdownError, toError } from '../errors.js';
import { classifyOutcome } from '../outcome.js';
import { leaseClaim } from '../sql/lease-claim.js';
import { leaseExtendMany } from '../sql/lease-extend-many.js';
import type { FinalizeResult } from '../sql/lease-finalize-many.js';
import type { Claimed } from '../sql/lease-row.js';
import { toReleased, type Transition } from '../transition.js';
import { transitionFor } from '../transition-for.js';
import { safeEmit, type WorkerEventMap } from './events.js';
import { Finalizer, type CommitHook } from './finalizer.js';
import type { HandlerContext } from './handler-context.js';
import { Heartbeat } from './heartbeat.js';
import { normalizeLeaseWorkerOptions, type LeaseWorkerOptions, type NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import { Listener } from './listener.js';
import { runUntilAborted } from './run-handler.js';
import type { RunSettings } from './settings.js';
import { Wakeup } from './wakeup.js';

interface InFlight<Row> {
  readonly task: Claimed<Row>;
  readonly settings: RunSettings;
  readonly controller: AbortController;
  readonly hooks: CommitHook[];
  readonly startedAt: number;
}

/** Options of {@link LeaseWorker.stop}. */
export interface StopOptions {
  /** Let in-flight handlers finish for this long, then abort them and release their tasks. @defaultValue '30s' */
  timeout?: Duration;
}

/**
 * Runs handlers for the rows of one leased table: claims only as many rows as it has free
 * slots, runs each handler outside any transaction, keeps their leases alive with a batched
 * heartbeat, classifies what they throw and writes the result with the fence. Wakes on
 * LISTEN/NOTIFY, polls as a fallback, and rides out database outages by backing off.
 *
 * @example
 * const worker = createLeaseWorker({ pool, table: outboxTable(), handle: async (row) => send(row) });
 * await worker.start();
 * process.once('SIGTERM', () => void worker.stop({ timeout: '10s' }));
 */
export class LeaseWorker<Row> extends EventEmitter<WorkerEventMap<Row>> {
  readonly owner: string;
  readonly #o: NormalizedLeaseWorkerOptions<Row>;
  readonly #inFlight = new Map<string, InFlight<Row>>();
  readonly #running = new Set<Promise<void>>();
  readonly #wakeup = new Wakeup();
  readonly #finalizer: Finalizer;
  readonly #heartbeat: Heartbeat;
  readonly #listener: Listener | undefined;
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #idle = false;
  readonly #onPoolError = (error: Error) => this.#error(error);

  constructor(options: LeaseWorkerOptions<Row>) {
    super();
    this.#o = normalizeLeaseWorkerOptions(options);
    this.owner = this.#o.owner;
    const { pool, table } = this.#o;
    this.#finalizer = new Finalizer(pool, table, (error) => this.#error(error));
    this.#heartbeat = new Heartbeat({
      executor: pool,
      table,
      intervalMs: this.#o.heartbeatIntervalMs,
      inFlight: () => [...this.#inFlight.values()].map((f) => ({ id: f.task.id, leaseVersion: f.task.leaseVersion, leaseMs: f.settings.leaseMs })),
      onLost: (id) => this.#leaseLost(id),
      onError: (error) => safeEmit(this, 'heartbeat:failed', { error }),
    });
    this.#listener = this.#o.listen
      ? new Listener(pool, table.channel, () => this.#wakeup.wake(), (error) => this.#error(error))
      : undefined;
  }

  /** Tasks whose handlers are running now. */
  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  /** Starts claiming. Resolves once the LISTEN connection is up (or is being retried). */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker ${this.owner} was already started`);
    this.#state = 'running';
    onPoolError(this.#o.pool, this.#onPoolError, 'on');
    await this.#listener?.start();
    this.#heartbeat.start();
    this.#loop = this.#claimLoop();
    safeEmit(this, 'worker:started', { owner: this.owner });
  }

  /**
   * Stops claiming, lets in-flight handlers finish for up to `timeout`, then aborts the rest
   * (their signal fires with `ShutdownError`) and returns their tasks to pending with the
   * attempt refunded. Idempotent; safe before `start()`.
   */
  stop(options: StopOptions = {}): Promise<void> {
    const timeoutMs = parseDuration(options.timeout ?? '30s', 'timeout', { allowZero: true });
    if (this.#state === 'new') this.#state = 'stopped';
    if (this.#state === 'stopped' && !this.#stopping) return Promise.resolve();
    return (this.#stopping ??= this.#shutdown(timeoutMs));
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    this.#state = 'stopping';
    this.#wakeup.wake();
    await this.#loop;
    if (this.#running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([Promise.all(this.#running), deadline]);
      clearTimeout(timer);
      for (const f of this.#inFlight.values()) f.controller.abort(new ShutdownError());
      await Promise.all(this.#running);
    }
    await this.#heartbeat.stop();
    await this.#finalizer.idle();
    await this.#listener?.stop();
    onPoolError(this.#o.pool, this.#onPoolError, 'off');
    this.#state = 'stopped';
    safeEmit(this, 'worker:stopped', { owner: this.owner });
  }

  async #claimLoop(): Promise<void> {
    let failures = 0;
    while (this.#state === 'running') {
      const free = this.#o.concurrency - this.#inFlight.size;
      if (free <= 0) {
        await this.#wakeup.wait(this.#o.pollIntervalMs);
        continue;
      }
      const want = Math.min(free, this.#o.batch);
      let claimed: Claimed<Row>[];
      try {
        const result = await leaseClaim(this.#o.pool, this.#o.table, {
          owner: this.owner,
          batch: want,
          leaseMs: this.#o.settings.leaseMs,
          names: this.#o.names,
          leaseMsByName: this.#o.leaseMsByName,
        });
        failures = 0;
        for (const reaped of result.reaped) safeEmit(this, 'task:reaped', reaped);
        claimed = result.claimed;
      } catch (error) {
        this.#error(toError(error));
        failures++;
        // back off (with jitter) while the database is unreachable, then try again
        await this.#wakeup.wait(Math.min(this.#o.pollIntervalMs, 50 * 2 ** failures) * (0.5 + Math.random() / 2));
        continue;
      }
      if (this.#state !== 'running') {
        for (const task of claimed) this.#release(task);
        break;
      }
      for (const task of claimed) this.#track(this.#run(task));
      if (claimed.length === want) continue; // there may be more waiting
      if (claimed.length === 0 && this.#inFlight.size === 0 && !this.#idle) {
        this.#idle = true;
        safeEmit(this, 'worker:idle', { owner: this.owner });
      }
      await this.#wakeup.wait(this.#o.pollIntervalMs);
    }
  }

  #track(run: Promise<void>): void {
    this.#running.add(run);
    void run.finally(() => {
      this.#running.delete(run);
      this.#wakeup.wake(); // a slot is free
    });
  }

  async #run(task: Claimed<Row>): Promise<void> {
    this.#idle = false;
    const settings = this.#o.settingsFor(task);
    const controller = new AbortController();
    const f: InFlight<Row> = { task, settings, controller, hooks: [], startedAt: performance.now() };
    this.#inFlight.set(task.id, f);
    const timer =
      settings.handlerTimeoutMs === null
        ? undefined
        : setTimeout(() => controller.abort(new HandlerTimeoutError(settings.handlerTimeoutMs!)), settings.handlerTimeoutMs);
    try {
      safeEmit(this, 'task:claimed', { task });
      let thrown: unknown;
      let threw = false;
      try {
        await runUntilAborted(() => this.#o.handle(task, this.#context(f)), controller.signal);
      } catch (error) {
        thrown = error;
        threw = true;
      }
      clearTimeout(timer);
      await this.#finish(f, thrown, threw);
    } catch (error) {
      this.#error(toError(error));
    } finally {
      clearTimeout(timer);
      this.#inFlight.delete(task.id);
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
      this.#leaseLost(task.id);
      return;
    }
    const result = await this.#write(f, transition);
    if (!result.won) return;
    switch (result.status) {
      case 'done':
        safeEmit(this, 'task:succeeded', { task, durationMs: performance.now() - f.startedAt });
        break;
      case 'pending':
        if (outcome.kind === 'defer') safeEmit(this, 'task:deferred', { task, delayMs: outcome.delayMs, reason: outcome.reason });
        else if (outcome.kind === 'retryable' && transition.to === 'pending')
          safeEmit(this, 'task:retrying', { task, error: outcome.error, delayMs: transition.delayMs });
        break;
      case 'dead':
        safeEmit(this, 'task:dead', { task, error: transition.to === 'done' ? '' : (transition.error ?? 'dead') });
        break;
      default:
        break;
    }
  }

  /** Writes a fenced transition; a refusal is reported as a lost lease. */
  async #write(f: InFlight<Row>, transition: Transition): Promise<FinalizeResult> {
    const item = { id: f.task.id, leaseVersion: f.task.leaseVersion, transition };
    const result =
      transition.to === 'done' && f.hooks.length > 0
        ? await this.#finalizer.submitWithHooks(item, f.hooks)
        : await this.#finalizer.submit(item);
    if (!result.won) {
      const error = new LeaseLostError(f.task.id, f.task.leaseVersion, `finalize refused: task ${f.task.id} lease_version ${f.task.leaseVersion} moved on`);
      safeEmit(this, 'task:lease-lost', { task: f.task, error });
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
        const extended = await leaseExtendMany(this.#o.pool, this.#o.table, [
          { id: f.task.id, leaseVersion: f.task.leaseVersion, leaseMs },
        ]);
        if (!extended.has(f.task.id)) {
          this.#leaseLost(f.task.id);
          throw f.controller.signal.reason as LeaseLostError;
        }
      },
      onCommit: (hook) => void f.hooks.push(hook),
    };
  }

  #leaseLost(id: string): void {
    const f = this.#inFlight.get(id);
    if (!f || f.controller.signal.aborted) return;
    const error = new LeaseLostError(id, f.task.leaseVersion);
    f.controller.abort(error);
    safeEmit(this, 'task:lease-lost', { task: f.task, error });
  }

  #release(task: Claimed<Row>): void {
    const f: InFlight<Row> = { task, settings: this.#o.settings, controller: new AbortController(), hooks: [], startedAt: performance.now() };
    this.#track(this.#giveBack(f).catch((e: unknown) => this.#error(toError(e))));
  }

  #error(error: Error): void {
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
