import type { EventEmitter } from 'eventemitter3';
import { parseDuration, type Duration } from '../duration.js';
import { CancelledError, HandlerTimeoutError, isLeaseholdError, LeaseLostError, ShutdownError, toError } from '../errors.js';
import { classifyOutcome } from '../outcome.js';
import type { LeaseToken } from '../primitives.js';
import { leaseExtendMany, type ExtendItem } from '../sql/lease-extend-many.js';
import { settlesGroup, type FinalizeResult } from '../sql/lease-finalize-many.js';
import { tokenKey, type Claimed } from '../sql/lease-row.js';
import { WorkerTelemetry, type TaskTelemetry } from '../telemetry/worker-telemetry.js';
import { toDone, toReleased, type Transition } from '../transition.js';
import { transitionFor } from '../transition-for.js';
import { listened, safeEmit, type WorkerEventMap } from './events.js';
import type { CommitHook, Finalizer } from './finalizer.js';
import { RUNNER_CONTROL, type HandlerContext, type RunnerControl } from './handler-context.js';
import type { NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import { emitOutcome } from './outcome-event.js';
import type { RunSettings } from './settings.js';
import { TaskAbort } from './task-abort.js';
import type { TrackedPool } from './tracked-pool.js';
import type { WorkerLog } from './worker-log.js';
import { isPromiseLike } from '../promise-like.js';

/** One claimed task, from its claim to its fenced write. */
class Held<Row> {
  /** `id@lease_version`, the key the runner holds it under. */
  readonly key: string;
  readonly abort = new TaskAbort();
  hooks: CommitHook[] | undefined;
  startedAt = 0;
  /** The handler is done and its fenced write is under way: that write's result decides. */
  writing = false;
  /** Its span and figures, when an OpenTelemetry SDK is registered. */
  tel: TaskTelemetry<Row> | undefined;
  /** What the handler returned, as JSON text (typed tasks), stored with `done`. */
  resultJson: string | null = null;
  /** The run parked (a workflow's wait): its row is written already, nothing more is. */
  suspended = false;
  /** The handler returned, threw or was aborted: what came first is what counts. */
  ended = false;
  /** Aborts the handler after `handlerTimeout`, when one is set. */
  timer: NodeJS.Timeout | undefined;
  /** Its life has ended: no longer held, counted out. */
  over = false;

  constructor(
    readonly task: Claimed<Row>,
    readonly settings: RunSettings,
  ) {
    this.key = tokenKey(task);
  }
}

/** What a {@link TaskRunner} works with; all of it belongs to its worker. */
export interface TaskRunnerParts<Row> {
  readonly options: NormalizedLeaseWorkerOptions<Row>;
  readonly db: TrackedPool;
  readonly finalizer: Finalizer;
  readonly log: WorkerLog;
  readonly emitter: EventEmitter<WorkerEventMap<Row>>;
  /** A handler returned after `ms` and freed its slot (the buffer has already refilled it). */
  readonly onSlotFree: (ms: number) => void;
  /** A task's fenced write is done (or given up): capacity held by lagging writes frees. */
  readonly onWritten: (task: Claimed<Row>) => void;
  /** False once the worker is stopping: claimed tasks then go straight back. */
  readonly running: () => boolean;
  readonly onError: (error: Error) => void;
}

/**
 * The tasks a worker holds, from claim to fenced write: runs each handler in a slot (at most
 * `concurrency` at once), keeps the rest in a buffer until a slot frees, classifies what the
 * handler threw and writes the result through the finalizer. A slot frees as soon as its handler
 * returns; the fenced write follows in the background. Per task it allocates what it must and
 * little else: this path runs tens of thousands of times a second.
 * @internal
 */
export class TaskRunner<Row> {
  readonly #p: TaskRunnerParts<Row>;
  /**
   * Claimed and not yet finalized: buffered, running or being written. Keyed by id and token:
   * the same id may be claimed again (by this worker) while its previous claim is still
   * being written, and the two must not be confused.
   */
  readonly #held = new Map<string, Held<Row>>();
  /** Claimed, waiting for a free slot. */
  #buffer: Held<Row>[] = [];
  /** Where the buffer's next task is (the buffer is consumed from the front). */
  #next = 0;
  #handlers = 0;
  /** {@link #pump} is starting buffered tasks: a slot freed meanwhile is its to refill. */
  #pumping = false;
  /** Tasks whose life (handler, then fenced write) has not ended. */
  #lives = 0;
  /** Fenced writes under way that finish rows of ordering groups (see {@link settling}). */
  #settling = 0;
  #drained: (() => void)[] = [];
  #tel: WorkerTelemetry<Row> | undefined;

  constructor(parts: TaskRunnerParts<Row>) {
    this.#p = parts;
  }

  /**
   * Loads the OpenTelemetry instrumentation when an SDK is registered now (the optional API is
   * imported only then). `start()` awaits it before the first claim.
   */
  async loadTelemetry(): Promise<void> {
    const { options, onError } = this.#p;
    try {
      this.#tel = await WorkerTelemetry.load(options.table, options.telemetry);
    } catch (error) {
      onError(toError(error)); // the SDK refused an instrument: run without
    }
  }

  /** Tasks held now (buffered, running, or being finalized). */
  get inFlight(): number {
    return this.#held.size;
  }

  /** Handlers running now (at most `concurrency`). */
  get running(): number {
    return this.#handlers;
  }

  /** Claimed tasks waiting for a slot. */
  get buffered(): number {
    return this.#buffer.length - this.#next;
  }

  /** Tasks whose handler is done and whose fenced write is under way. */
  get writing(): number {
    return this.#held.size - this.#handlers - this.buffered;
  }

  /**
   * Fenced writes under way that finish rows of ordering groups: each hands its group the next
   * head when it commits, and wakes the claim loop then (see the worker's `onWritten`).
   */
  get settling(): number {
    return this.#settling;
  }

  /** The claimed tasks held now. */
  tasks(): Claimed<Row>[] {
    return [...this.#held.values()].map((h) => h.task);
  }

  /** The leases the heartbeat extends: every task held, each by its own lease. */
  leases(): ExtendItem[] {
    return [...this.#held.values()].map((h) => ({ id: h.task.id, leaseVersion: h.task.leaseVersion, leaseMs: h.settings.leaseMs }));
  }

  /** The heartbeat could not extend this lease; `cancelled`: because `cancelTask` ended the task. */
  heartbeatLost(token: LeaseToken, cancelled = false): void {
    const h = this.#held.get(tokenKey(token));
    // a tick that raced a task's own fenced write is no news: the write reports the truth
    if (h === undefined || h.writing) return;
    if (cancelled) this.#cancelled(h);
    else this.leaseLost(token);
  }

  // Someone cancelled the running task: its row is `cancelled` already, so the fence refuses any
  // write of this run; the handler's signal fires with a CancelledError.
  #cancelled(h: Held<Row>): void {
    if (h.abort.aborted) return;
    const error = new CancelledError(h.task.id);
    h.abort.abort(error);
    this.#p.log.write('info', `cancelled: task ${h.task.id}`, this.#p.log.task(h.task));
    safeEmit(this.#p.emitter, 'task:cancelled', { task: h.task });
  }

  /** Takes charge of a claimed task: runs it now if a slot is free, else buffers it. */
  accept(task: Claimed<Row>): void {
    const h = new Held(task, this.#p.options.settingsFor(task));
    this.#held.set(h.key, h);
    if (this.#tel !== undefined) h.tel = this.#tel.claimed(task);
    if (listened(this.#p.emitter, 'task:claimed')) safeEmit(this.#p.emitter, 'task:claimed', { task });
    if (!this.#p.running()) {
      h.abort.abort(new ShutdownError());
      this.#begin(h);
    } else {
      this.#buffer.push(h);
      this.#pump();
    }
  }

  /** Gives buffered tasks back (they never started): straight back to pending. */
  releaseBuffered(): void {
    for (let h = this.#shift(); h !== undefined; h = this.#shift()) {
      h.abort.abort(new ShutdownError());
      this.#begin(h);
    }
  }

  /** Aborts every running handler with `ShutdownError`; their tasks go back to pending. */
  abortAll(): void {
    for (const h of this.#held.values()) h.abort.abort(new ShutdownError());
  }

  /** Resolves when no task is left (tasks claimed meanwhile included). */
  drained(): Promise<void> {
    if (this.#lives === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** Aborts a task whose lease moved on, and reports it. */
  leaseLost(token: LeaseToken): void {
    const h = this.#held.get(tokenKey(token));
    if (!h || h.abort.aborted) return;
    const error = new LeaseLostError(token.id, token.leaseVersion);
    h.abort.abort(error);
    this.#reportLeaseLost(h.task, error);
  }

  #shift(): Held<Row> | undefined {
    if (this.#next >= this.#buffer.length) return undefined;
    const h = this.#buffer[this.#next++];
    // compact now and then rather than shifting an array of hundreds for every task
    if (this.#next === this.#buffer.length) {
      this.#buffer = [];
      this.#next = 0;
    } else if (this.#next >= 1024) {
      this.#buffer = this.#buffer.slice(this.#next);
      this.#next = 0;
    }
    return h;
  }

  /**
   * Starts buffered tasks while slots are free. A handler that returns at once frees its slot
   * inside this loop; the loop, not a nested call, starts the next one, so a buffer of hundreds
   * of quick tasks runs in one flat loop rather than a deep stack.
   */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#handlers < this.#p.options.concurrency && this.#p.running()) {
        const next = this.#shift();
        if (next === undefined) break;
        this.#begin(next);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /**
   * One task's life: its handler in a slot, then (slot already free) its fenced write, then
   * {@link #end}. Callbacks rather than async functions: an async function's frame and awaits
   * cost allocations on every task, and a handler that returns at once needs no promise at all
   * (bench/RESULTS.md). Never throws.
   */
  #begin(h: Held<Row>): void {
    this.#lives++;
    // aborted while buffered (its lease lost, stopping): it never takes a slot
    if (h.abort.aborted) return this.#afterHandler(h, h.abort.reason);
    this.#handlers++;
    h.startedAt = performance.now();
    const timeoutMs = h.settings.handlerTimeoutMs;
    if (timeoutMs !== null) h.timer = setTimeout(() => h.abort.abort(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    const tel = h.tel;
    tel?.start(h.startedAt, h.settings.leaseMs);
    // an abort ends the wait at once, so a handler that ignores its signal cannot hold the slot;
    // its late result is dropped (and a late write it attempts is stopped by the fence). Deferred
    // a microtask: whoever aborts finishes its own work (reporting a lost lease, say) first.
    h.abort.onAbort = (reason) => queueMicrotask(() => this.#handlerEnded(h, reason));
    try {
      const ctx = new Context(this, h);
      const running = tel === undefined ? this.#p.options.handle(h.task, ctx) : tel.run(() => this.#p.options.handle(h.task, ctx));
      if (isPromiseLike(running)) {
        running.then(
          () => this.#handlerEnded(h, NOTHING),
          (error: unknown) => this.#handlerEnded(h, error),
        );
        return;
      }
    } catch (error) {
      if (!h.abort.aborted) this.#handlerEnded(h, error);
      return;
    }
    // returned at once; an abort during the call has settled it already (see onAbort)
    if (!h.abort.aborted) this.#handlerEnded(h, NOTHING);
  }

  /** The handler returned, threw or was aborted (the first of these counts): its slot frees. */
  #handlerEnded(h: Held<Row>, thrown: unknown): void {
    if (h.ended) return;
    h.ended = true;
    h.abort.onAbort = undefined;
    clearTimeout(h.timer);
    this.#handlers--;
    try {
      // the slot is free now: hand it to a buffered task; the claim loop decides on a refill
      this.#pump();
      const ms = performance.now() - h.startedAt;
      h.tel?.handled(ms);
      this.#p.onSlotFree(ms);
    } catch (error) {
      this.#p.onError(toError(error));
    }
    this.#afterHandler(h, thrown);
  }

  #afterHandler(h: Held<Row>, thrown: unknown): void {
    h.writing = true;
    try {
      this.#finish(h, thrown);
    } catch (error) {
      this.#p.onError(toError(error));
      this.#end(h);
    }
  }

  /** The life is over: the task is written (or given up). Counts once, whatever calls it again. */
  #end(h: Held<Row>): void {
    if (h.over) return;
    h.over = true;
    h.tel?.abandon(); // a write that failed outright: end the span all the same
    this.#held.delete(h.key);
    this.#p.onWritten(h.task);
    if (--this.#lives === 0) for (const resolve of this.#drained.splice(0)) resolve();
  }

  /** Decides and writes what the handler's end means; calls {@link #end} once that is done. */
  #finish(h: Held<Row>, thrown: unknown): void {
    const { task, settings } = h;
    const threw = thrown !== NOTHING;
    const reason: unknown = h.abort.aborted ? h.abort.reason : undefined;
    if (reason instanceof LeaseLostError) {
      h.tel?.settle('lease_lost', reason); // reported when detected; write nothing
      return this.#end(h);
    }
    // its row says so already: write nothing (a workflow's refused write says so as it throws)
    if (reason === undefined && threw && isLeaseholdError(thrown, 'CANCELLED')) this.#cancelled(h);
    if (h.abort.reason instanceof CancelledError) {
      h.tel?.settle('cancelled', h.abort.reason);
      return this.#end(h);
    }
    if (h.suspended) {
      // the park was the write; the run ends here whatever the handler did after it
      if (listened(this.#p.emitter, 'task:suspended')) safeEmit(this.#p.emitter, 'task:suspended', { task });
      h.tel?.settle('suspended');
      return this.#end(h);
    }
    if (reason instanceof ShutdownError) {
      // returns the task to pending, attempt refunded (the worker is stopping)
      return this.#write(h, toReleased('released by a stopping worker'), () => {
        safeEmit(this.#p.emitter, 'task:released', { task });
        h.tel?.settle('released');
      });
    }
    const outcome = classifyOutcome(threw && reason !== undefined ? reason : threw ? thrown : undefined, threw);
    const transition = outcome.kind === 'success' && h.resultJson !== null ? toDone(h.resultJson) : transitionFor(outcome, task, settings.policy);
    if (transition === null) {
      this.leaseLost(task);
      h.tel?.settle('lease_lost', h.abort.reason as Error);
      return this.#end(h);
    }
    this.#write(h, transition, (status) => {
      emitOutcome(this.#p.emitter, this.#p.log, task, outcome, transition, status, performance.now() - h.startedAt);
      h.tel?.written(outcome, status, transition);
    });
  }

  /**
   * Writes a fenced transition, then calls `won` if the fence let it through (a refusal is
   * reported as a lost lease), then ends the life. A write that failed outright is reported.
   */
  #write(h: Held<Row>, transition: Transition, won: (status: FinalizeResult['status']) => void): void {
    // a child task (core's task table) may wake its parent when it ends
    const parentId = (h.task as { readonly parentId?: string | null }).parentId ?? null;
    const item = { id: h.task.id, leaseVersion: h.task.leaseVersion, transition, groupKey: h.task.groupKey, parentId };
    const settles = settlesGroup(item);
    if (settles) this.#settling++;
    const written = (result: FinalizeResult | undefined, error?: Error): void => {
      if (settles) this.#settling--;
      try {
        if (result === undefined) this.#p.onError(error ?? new Error('finalize failed'));
        else if (result.won) won(result.status);
        else {
          const lost = new LeaseLostError(h.task.id, h.task.leaseVersion, `finalize refused: task ${h.task.id} lease_version ${h.task.leaseVersion} moved on`);
          this.#reportLeaseLost(h.task, lost);
          h.tel?.settle('lease_lost', lost);
        }
      } catch (thrown) {
        this.#p.onError(toError(thrown));
      }
      this.#end(h);
    };
    if (transition.to === 'done' && h.hooks !== undefined) {
      this.#p.finalizer.submitWithHooks(item, h.hooks).then(written, (error: unknown) => written(undefined, toError(error)));
    } else {
      this.#p.finalizer.enqueue(item, written);
      // nothing left to run here: this write need not wait behind the one in flight
      if (this.#handlers === 0 && this.buffered === 0) this.#p.finalizer.hurry();
    }
  }

  /** `ctx.extendLease()` of a running task. */
  async extendLease(h: Held<Row>, lease?: Duration): Promise<void> {
    const leaseMs = lease === undefined ? h.settings.leaseMs : parseDuration(lease, 'lease');
    const extended = await leaseExtendMany(this.#p.db, this.#p.options.table, [{ id: h.task.id, leaseVersion: h.task.leaseVersion, leaseMs }]);
    if (!extended.has(h.key)) {
      this.leaseLost(h.task);
      throw h.abort.reason as LeaseLostError;
    }
  }

  // The effect may already have happened; whoever owns the task now repeats it, and the task id
  // lets downstream deduplicate. Never silent: an event, and a log line.
  #reportLeaseLost(task: Claimed<Row>, error: LeaseLostError): void {
    this.#p.log.write('warn', `lost lease: ${error.message}`, { ...this.#p.log.task(task), err: error });
    safeEmit(this.#p.emitter, 'task:lease-lost', { task, error });
  }
}

/** What a handler that returned "threw". */
const NOTHING: unknown = Symbol('nothing thrown');

/**
 * A running task's {@link HandlerContext}: one small object whose members are made on first
 * read (the signal, and the two functions, bound so that `const { extendLease } = ctx` works).
 */
class Context<Row> implements HandlerContext {
  readonly #runner: TaskRunner<Row>;
  readonly #held: Held<Row>;
  #extendLease: HandlerContext['extendLease'] | undefined;
  #onCommit: HandlerContext['onCommit'] | undefined;
  #control: RunnerControl | undefined;

  constructor(runner: TaskRunner<Row>, held: Held<Row>) {
    this.#runner = runner;
    this.#held = held;
  }

  get [RUNNER_CONTROL](): RunnerControl {
    const h = this.#held;
    return (this.#control ??= {
      result: (json) => void (h.resultJson = json),
      suspended: (reason) => {
        h.suspended = true;
        h.abort.abort(reason);
      },
    });
  }

  get signal(): AbortSignal {
    return this.#held.abort.signal;
  }

  get extendLease(): HandlerContext['extendLease'] {
    return (this.#extendLease ??= (lease?: Duration) => this.#runner.extendLease(this.#held, lease));
  }

  get onCommit(): HandlerContext['onCommit'] {
    return (this.#onCommit ??= (hook: CommitHook) => void (this.#held.hooks ??= []).push(hook));
  }
}
