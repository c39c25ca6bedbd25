import type { EventEmitter } from 'eventemitter3';
import { parseDuration, type Duration } from '../duration.js';
import { CancelledError, HandlerTimeoutError, isLeaseholdError, LeaseLostError, ShutdownError, toError } from '../errors.js';
import { classifyOutcome, type Outcome } from '../outcome.js';
import type { LeaseToken } from '../primitives.js';
import { leaseExtendMany, type ExtendItem } from '../sql/lease-extend-many.js';
import { settlesGroup, type FinalizeResult } from '../sql/lease-finalize-many.js';
import { tokenKey, type Claimed } from '../sql/lease-row.js';
import { WorkerTelemetry } from '../telemetry/worker-telemetry.js';
import { toDone, toReleased, type Transition } from '../transition.js';
import { transitionFor } from '../transition-for.js';
import { listened, safeEmit, type WorkerEventMap } from './events.js';
import type { CommitHook, Finalizer } from './finalizer.js';
import { RUNNER_CONTROL, type HandlerContext, type RunnerControl } from './handler-context.js';
import type { NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import { emitOutcome } from './outcome-event.js';
import { DONE, Held, RELEASED, SUCCESS, type HeldBy } from './held-task.js';
import type { TrackedPool } from './tracked-pool.js';
import type { WorkerLog } from './worker-log.js';
import { isPromiseLike } from '../promise-like.js';

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
  /**
   * A write of this worker's made a task claimable in `ms` (a retry's backoff, a deferral, a
   * parked run's wake or deadline), counted from when the database wrote it: the claim loop
   * arms its timer for it, without waiting for a claim to report it.
   */
  readonly onDue?: ((ms: number) => void) | undefined;
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
export class TaskRunner<Row> implements HeldBy<Row> {
  readonly #p: TaskRunnerParts<Row>;
  /**
   * Claimed and not yet finalized: buffered, running or being written. The same id may be
   * claimed again (by this worker) while its previous claim is still being written: a lookup
   * by token ({@link #find}) tells the two apart.
   */
  readonly #held = new Set<Held<Row>>();
  /** Claimed, waiting for a free slot. */
  #buffer: Held<Row>[] = [];
  /** Claimed ahead of their time, each waiting for its timer (see {@link acceptAll}). */
  readonly #early = new Set<Held<Row>>();
  /** Handlers that gave their slot back (see {@link release}) and wait for one again: served first. */
  #resuming: { readonly h: Held<Row>; readonly resolve: () => void }[] = [];
  /** Handlers that lent their slot (see {@link release}) and have not taken one back. */
  #lent = 0;
  /** Where the buffer's next task is (the buffer is consumed from the front). */
  #next = 0;
  #handlers = 0;
  /** {@link #pump} is starting buffered tasks: a slot freed meanwhile is its to refill. */
  #pumping = false;
  /** Tasks whose life (handler, then fenced write) has not ended. */
  #lives = 0;
  /** Lives ended (see {@link written}). */
  #written = 0;
  /** Fenced writes under way that finish rows of ordering groups (see {@link settling}). */
  #settling = 0;
  /** The lowest id such writes that ended made claimable, since the claim loop last took it (see {@link takeUnblockedFrom}). */
  #unblockedFrom: bigint | undefined;
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

  /**
   * Claimed tasks waiting for a slot, or for their time (claimed ahead of it): the claim sizing
   * counts both, so a worker does not claim more while it holds rows it cannot start yet.
   */
  get buffered(): number {
    return this.#buffer.length - this.#next + this.#early.size;
  }

  /**
   * Handlers that lent their slot while they wait for a write of the worker's own (see
   * `RunnerControl.release`): running all the same, for the claim sizing.
   */
  get lent(): number {
    return this.#lent;
  }

  /** How many tasks' lives have ended (written, or given up): it moves as writes commit. */
  get written(): number {
    return this.#written;
  }

  /** Tasks whose handler is done and whose fenced write is under way. */
  get writing(): number {
    return this.#held.size - this.#handlers - this.#lent - this.buffered;
  }

  /**
   * The lowest id of the next heads that this worker's ended writes of ordering groups' rows made
   * claimable since the last call (`'0'` when a write's is not known), or undefined when none:
   * such a row may have any id, so the claims after it start at or below it. Takes it.
   */
  takeUnblockedFrom(): string | undefined {
    const from = this.#unblockedFrom;
    this.#unblockedFrom = undefined;
    return from === undefined ? undefined : String(from);
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
    return [...this.#held].map((h) => h.task);
  }

  /** The leases the heartbeat extends: every task held, each by its own lease. */
  leases(): ExtendItem[] {
    return [...this.#held].map((h) => ({ id: h.id, leaseVersion: h.leaseVersion, leaseMs: h.settings.leaseMs }));
  }

  // A linear search: only a lost lease or a cancel looks a task up, never the path of every task.
  #find(token: LeaseToken): Held<Row> | undefined {
    for (const h of this.#held) if (h.holds(token)) return h;
    return undefined;
  }

  /** The heartbeat could not extend this lease; `cancelled`: because `cancelTask` ended the task. */
  heartbeatLost(token: LeaseToken, cancelled = false): void {
    const h = this.#find(token);
    // a tick that raced a task's own fenced write is no news: the write reports the truth
    if (h === undefined || h.writing) return;
    if (cancelled) this.#cancelled(h);
    else this.leaseLost(token);
  }

  // Someone cancelled the running task: its row is `cancelled` already, so the fence refuses any
  // write of this run; the handler's signal fires with a CancelledError.
  #cancelled(h: Held<Row>): void {
    if (h.aborted) return;
    const error = new CancelledError(h.task.id);
    h.abort(error);
    this.#p.log.write('info', `cancelled: task ${h.task.id}`, this.#p.log.task(h.task));
    safeEmit(this.#p.emitter, 'task:cancelled', { task: h.task });
  }

  /**
   * Takes charge of claimed tasks: runs them now while slots are free, and buffers the rest. A
   * task in `later` (id → ms until its time, see `LeaseClaimResult.ahead`) waits that long from
   * now, held, then goes ahead of the buffer: it never starts before its time.
   */
  acceptAll(tasks: readonly Claimed<Row>[], firstIds?: readonly string[] | null, later?: ReadonlyMap<string, number> | null): void {
    const { options, emitter } = this.#p;
    const claimedListened = listened(emitter, 'task:claimed');
    // rows under a limit hold its slot or a spent start from their claim: they go ahead of the buffer
    const first = firstIds === undefined || firstIds === null || firstIds.length === 0 ? undefined : new Set(firstIds);
    const ahead: Held<Row>[] = [];
    const tel = this.#tel;
    // the claim's rows arrived together: one clock reading dates them all (queue wait)
    const acceptedAt = tel === undefined ? 0 : performance.now();
    for (const task of tasks) {
      const h = new Held(this, task, options.settingsFor(task));
      // its write frees the limit's slot: that write wakes the waiting workers once (FinalizeItem.limited)
      if (first !== undefined && first.has(task.id)) h.limited = true;
      this.#held.add(h);
      if (tel !== undefined) h.tel = tel.claimed(task, acceptedAt);
      if (claimedListened) safeEmit(emitter, 'task:claimed', { task });
      const dueInMs = later?.get(task.id);
      if (dueInMs !== undefined && dueInMs > 0) h.dueAt = performance.now() + dueInMs;
      if (!this.#p.running()) {
        h.abort(new ShutdownError());
        this.#begin(h);
      } else if (dueInMs !== undefined && dueInMs > 0) this.#startAt(h, dueInMs);
      else if (first?.has(task.id)) ahead.push(h);
      else this.#buffer.push(h);
    }
    if (ahead.length > 0) this.#buffer.splice(this.#next, 0, ...ahead);
    this.#pump();
  }

  // A row that came due has waited its turn already: it goes ahead of what is buffered. Node
  // counts a timer from the event loop's cached clock, which lags while a turn runs (parsing the
  // claim that brought this row, say), so a timer may fire a few ms early: it is checked.
  #startAt(h: Held<Row>, ms: number): void {
    this.#early.add(h);
    h.dueTimer = setTimeout(() => {
      h.dueTimer = undefined;
      const left = h.dueAt - performance.now();
      if (!this.#early.has(h)) return;
      if (left > 0) return this.#startAt(h, Math.ceil(left));
      this.#early.delete(h);
      this.#buffer.splice(this.#next, 0, h);
      this.#pump();
    }, ms);
  }

  /** Gives buffered tasks back (they never started): back to pending, due when they were. */
  releaseBuffered(): void {
    for (const h of this.#early) {
      clearTimeout(h.dueTimer);
      h.dueTimer = undefined;
      this.#early.delete(h);
      h.abort(new ShutdownError());
      this.#begin(h);
    }
    for (let h = this.#shift(); h !== undefined; h = this.#shift()) {
      h.abort(new ShutdownError());
      this.#begin(h);
    }
  }

  /** Aborts every running handler with `ShutdownError`; their tasks go back to pending. */
  abortAll(): void {
    for (const h of this.#held) h.abort(new ShutdownError());
  }

  /** Resolves when no task is left (tasks claimed meanwhile included). */
  drained(): Promise<void> {
    if (this.#lives === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** Aborts a task whose lease moved on, and reports it. */
  leaseLost(token: LeaseToken): void {
    const h = this.#find(token);
    if (!h || h.aborted) return;
    const error = new LeaseLostError(token.id, token.leaseVersion);
    h.abort(error);
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
      // handlers that lent their slot come first: they are running tasks (a stopping worker's too)
      while (this.#resuming.length > 0 && this.#handlers < this.#p.options.concurrency) {
        const { h, resolve } = this.#resuming.shift()!;
        h.released = false;
        this.#lent--;
        this.#handlers++;
        resolve();
      }
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
    if (h.aborted) return this.#afterHandler(h, h.reason);
    this.#handlers++;
    h.startedAt = performance.now();
    const timeoutMs = h.settings.handlerTimeoutMs;
    if (timeoutMs !== null) h.timer = setTimeout(() => h.abort(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    const tel = h.tel;
    tel?.start(h.startedAt, h.settings.leaseMs);
    // an abort ends the wait at once (see Held.onAborted), so a handler that ignores its signal
    // cannot hold the slot; its late result is dropped (and a late write it attempts is stopped
    // by the fence)
    h.waiting = true;
    let returned: unknown;
    try {
      const ctx = new Context(this, h);
      const handle = this.#p.options.handle;
      returned = tel === undefined ? handle(h.task, ctx) : tel.run(() => handle(h.task, ctx));
    } catch (error) {
      if (!h.aborted) this.#handlerEnded(h, error);
      return;
    }
    if (isPromiseLike(returned)) {
      returned.then(
        (value) => this.#handlerReturned(h, value),
        (error: unknown) => this.#handlerEnded(h, error),
      );
      return;
    }
    // returned at once; an abort during the call has settled it already (see onAborted)
    if (!h.aborted) this.#handlerReturned(h, returned);
  }

  /** The handler returned `value`: kept as the task's result (typed tasks), unless it cannot be. */
  #handlerReturned(h: Held<Row>, value: unknown): void {
    const failure = h.returnCheck?.();
    if (failure !== undefined) return this.#handlerEnded(h, failure);
    const result = this.#p.options.result;
    if (value !== undefined && result !== undefined && !h.ended) {
      try {
        h.resultJson = result(value, h.task);
      } catch (error) {
        return this.#handlerEnded(h, error); // not JSON: fails as a throw of the handler would
      }
    }
    this.#handlerEnded(h, NOTHING);
  }

  /**
   * A running handler gives its slot back while it waits for a write of the worker's own (see
   * `RunnerControl.release`); the function returned takes one back.
   */
  release(h: Held<Row>): () => Promise<void> {
    if (h.ended || h.released) return resolvedResume;
    h.released = true;
    this.#handlers--;
    this.#lent++;
    // the slot goes to a buffered task; the claim sizing counts this one as running still, so
    // that lending does not claim more (more runs under way would each wait longer for their
    // writes and their slots back)
    try {
      this.#pump();
    } catch (error) {
      this.#p.onError(toError(error));
    }
    let back: Promise<void> | undefined;
    return () => (back ??= this.#takeBack(h));
  }

  #takeBack(h: Held<Row>): Promise<void> {
    // ended meanwhile (aborted): it holds nothing and takes nothing; its result is dropped
    if (!h.released || h.ended) return Promise.resolve();
    if (this.#handlers < this.#p.options.concurrency) {
      h.released = false;
      this.#lent--;
      this.#handlers++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.#resuming.push({ h, resolve }));
  }

  /** An abort ended the wait for a running handler (see `Held.onAborted`). @internal */
  handlerAborted(h: Held<Row>, reason: unknown): void {
    this.#handlerEnded(h, reason);
  }

  /** The handler returned, threw or was aborted (the first of these counts): its slot frees. */
  #handlerEnded(h: Held<Row>, thrown: unknown): void {
    if (h.ended) return;
    h.ended = true;
    h.waiting = false;
    if (h.timer !== undefined) clearTimeout(h.timer);
    if (h.released) {
      // ended while its slot was lent (an abort): it holds none; a wait for one ends here
      h.released = false;
      this.#lent--;
      const at = this.#resuming.findIndex((r) => r.h === h);
      if (at >= 0) this.#resuming.splice(at, 1)[0]!.resolve();
    } else this.#handlers--;
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
      // what nearly every task does: returned, not aborted, not parked
      if (thrown === NOTHING && !h.aborted && !h.suspended) this.#write(h, h.resultJson === null ? DONE : toDone(h.resultJson), SUCCESS);
      else this.#finish(h, thrown);
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
    this.#held.delete(h);
    this.#written++;
    this.#p.onWritten(h.task);
    if (--this.#lives === 0) for (const resolve of this.#drained.splice(0)) resolve();
  }

  /** Decides and writes what an unusual end means (see #afterHandler); calls {@link #end} once that is done. */
  #finish(h: Held<Row>, thrown: unknown): void {
    const { task, settings } = h;
    const threw = thrown !== NOTHING;
    const reason: unknown = h.aborted ? h.reason : undefined;
    if (reason instanceof LeaseLostError) {
      h.tel?.settle('lease_lost', reason); // reported when detected; write nothing
      return this.#end(h);
    }
    // its row says so already: write nothing (a workflow's refused write says so as it throws)
    if (reason === undefined && threw && isLeaseholdError(thrown, 'CANCELLED')) this.#cancelled(h);
    if (h.reason instanceof CancelledError) {
      h.tel?.settle('cancelled', h.reason);
      return this.#end(h);
    }
    if (h.suspended) {
      // the park was the write; the run ends here whatever the handler did after it
      if (listened(this.#p.emitter, 'task:suspended')) safeEmit(this.#p.emitter, 'task:suspended', { task });
      h.tel?.settle('suspended');
      return this.#end(h);
    }
    // returns the task to pending, attempt refunded (the worker is stopping); one claimed ahead
    // of its time stays due then
    if (reason instanceof ShutdownError) {
      const dueInMs = Number.isNaN(h.dueAt) ? 0 : Math.max(0, Math.ceil(h.dueAt - performance.now()));
      return this.#write(h, toReleased('released by a stopping worker', dueInMs), RELEASED);
    }
    const outcome = classifyOutcome(threw && reason !== undefined ? reason : threw ? thrown : undefined, threw);
    const transition = outcome.kind === 'success' && h.resultJson !== null ? toDone(h.resultJson) : transitionFor(outcome, task, settings.policy);
    if (transition === null) {
      this.leaseLost(task);
      h.tel?.settle('lease_lost', h.reason as Error);
      return this.#end(h);
    }
    this.#write(h, transition, outcome);
  }

  /** Queues the fenced write of `transition`; {@link finalized} hears how it ended. */
  #write(h: Held<Row>, transition: Transition, outcome: Outcome | typeof RELEASED): void {
    h.transition = transition;
    h.outcome = outcome;
    h.settles = settlesGroup(h);
    if (h.settles) this.#settling++;
    if (transition.to === 'done' && h.hooks !== undefined) {
      this.#p.finalizer.submitWithHooks(h, h.hooks).then(
        (result) => this.finalized(h, result),
        (error: unknown) => this.finalized(h, undefined, toError(error)),
      );
    } else {
      this.#p.finalizer.enqueue(h);
      // nothing left to run here now (rows held for their time run later): this write need not
      // wait behind the one in flight
      if (this.#handlers === 0 && this.#buffer.length === this.#next) this.#p.finalizer.hurry();
    }
  }

  /**
   * A task's fenced write ended: reports what the fence let through (a refusal as a lost lease,
   * or as the cancel it was) or that the write failed outright, then ends the life. @internal
   */
  finalized(h: Held<Row>, result: FinalizeResult | undefined, error?: Error): void {
    if (h.settles) {
      this.#settling--;
      // a write that made no next head claimable (it emptied its groups, or handed their heads
      // to this worker) moves no claim back; one whose heads are not known, to the start
      const from = result?.unblockedFrom === undefined ? 0n : result.unblockedFrom === null ? undefined : BigInt(result.unblockedFrom);
      if (from !== undefined && (this.#unblockedFrom === undefined || from < this.#unblockedFrom)) this.#unblockedFrom = from;
    }
    try {
      if (result === undefined) this.#p.onError(error ?? new Error('finalize failed'));
      else if (result.won) this.#won(h, result.status);
      else if (result.status === 'cancelled') {
        // cancelled while its handler finished: the row says so, and no lease was lost
        this.#cancelled(h);
        h.tel?.settle('cancelled', h.reason as Error);
      } else {
        const lost = new LeaseLostError(h.id, h.leaseVersion, `finalize refused: task ${h.id} lease_version ${h.leaseVersion} moved on`);
        this.#reportLeaseLost(h.task, lost);
        h.tel?.settle('lease_lost', lost);
      }
    } catch (thrown) {
      this.#p.onError(toError(thrown));
    }
    this.#end(h);
  }

  // The fence let the write through: the one event (and log line) it stands for.
  #won(h: Held<Row>, status: FinalizeResult['status']): void {
    const { emitter, log } = this.#p;
    const { task, outcome } = h;
    if (status === 'pending' && h.transition?.to === 'pending') this.#p.onDue?.(h.transition.delayMs);
    if (outcome === RELEASED) {
      safeEmit(emitter, 'task:released', { task });
      h.tel?.settle('released');
      return;
    }
    if (status === 'done') {
      // what nearly every task does: no clock reading unless someone listens
      if (listened(emitter, 'task:succeeded')) safeEmit(emitter, 'task:succeeded', { task, durationMs: performance.now() - h.startedAt });
      h.tel?.settle('succeeded');
      return;
    }
    emitOutcome(emitter, log, task, outcome, h.transition, status, performance.now() - h.startedAt);
    h.tel?.written(outcome, status, h.transition);
  }

  /** A run of this worker's parked until `ms` from now (see `TaskRunnerParts.onDue`). @internal */
  due(ms: number): void {
    this.#p.onDue?.(ms);
  }

  /** `ctx.extendLease()` of a running task. */
  async extendLease(h: Held<Row>, lease?: Duration): Promise<void> {
    const leaseMs = lease === undefined ? h.settings.leaseMs : parseDuration(lease, 'lease');
    const extended = await leaseExtendMany(this.#p.db, this.#p.options.table, [{ id: h.id, leaseVersion: h.leaseVersion, leaseMs }]);
    if (!extended.has(tokenKey(h))) {
      this.leaseLost(h.task);
      throw h.reason as LeaseLostError;
    }
  }

  // The effect may already have happened; whoever owns the task now repeats it, and the task id
  // lets downstream deduplicate. Never silent: an event, and a log line.
  #reportLeaseLost(task: Claimed<Row>, error: LeaseLostError): void {
    this.#p.log.write('warn', `lost lease: ${error.message}`, { ...this.#p.log.task(task), err: error });
    safeEmit(this.#p.emitter, 'task:lease-lost', { task, error });
  }
}

const resolvedResume = () => Promise.resolve();

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
      suspended: (reason, dueInMs) => {
        h.suspended = true;
        if (dueInMs !== undefined) this.#runner.due(dueInMs);
        h.abort(reason);
      },
      failed: (reason) => h.abort(reason),
      onReturn: (check) => {
        h.returnCheck = check;
      },
      release: () => this.#runner.release(h),
    });
  }

  get signal(): AbortSignal {
    return this.#held.signal;
  }

  get extendLease(): HandlerContext['extendLease'] {
    return (this.#extendLease ??= (lease?: Duration) => this.#runner.extendLease(this.#held, lease));
  }

  get onCommit(): HandlerContext['onCommit'] {
    return (this.#onCommit ??= (hook: CommitHook) => void (this.#held.hooks ??= []).push(hook));
  }
}
