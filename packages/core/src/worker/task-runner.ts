import type { EventEmitter } from 'eventemitter3';
import { parseDuration, type Duration } from '../duration.js';
import { HandlerTimeoutError, LeaseLostError, ShutdownError, toError } from '../errors.js';
import { classifyOutcome } from '../outcome.js';
import type { LeaseToken } from '../primitives.js';
import { leaseExtendMany, type ExtendItem } from '../sql/lease-extend-many.js';
import type { FinalizeResult } from '../sql/lease-finalize-many.js';
import { tokenKey, type Claimed } from '../sql/lease-row.js';
import { toReleased, type Transition } from '../transition.js';
import { transitionFor } from '../transition-for.js';
import { safeEmit, type WorkerEventMap } from './events.js';
import type { CommitHook, Finalizer } from './finalizer.js';
import type { HandlerContext } from './handler-context.js';
import type { NormalizedLeaseWorkerOptions } from './lease-worker-options.js';
import { emitOutcome } from './outcome-event.js';
import { runUntilAborted } from './run-handler.js';
import type { RunSettings } from './settings.js';
import type { TrackedPool } from './tracked-pool.js';
import type { Wakeup } from './wakeup.js';
import type { WorkerLog } from './worker-log.js';

interface InFlight<Row> {
  readonly task: Claimed<Row>;
  readonly settings: RunSettings;
  readonly controller: AbortController;
  readonly hooks: CommitHook[];
  startedAt: number;
  /** The handler is done and its fenced write is under way: that write's result decides. */
  writing: boolean;
}

/** What a {@link TaskRunner} works with; all of it belongs to its worker. */
export interface TaskRunnerParts<Row> {
  readonly options: NormalizedLeaseWorkerOptions<Row>;
  readonly db: TrackedPool;
  readonly finalizer: Finalizer;
  readonly log: WorkerLog;
  readonly emitter: EventEmitter<WorkerEventMap<Row>>;
  /** Woken when a slot or capacity frees, or an ordered group may have a new head. */
  readonly wakeup: Wakeup;
  /** False once the worker is stopping: claimed tasks then go straight back. */
  readonly running: () => boolean;
  readonly onError: (error: Error) => void;
}

/**
 * The tasks a worker holds, from claim to fenced write: runs each handler in a slot (at most
 * `concurrency` at once), keeps the rest in a buffer until a slot frees, classifies what the
 * handler threw and writes the result through the finalizer. A slot frees as soon as its handler
 * returns; the fenced write follows in the background.
 * @internal
 */
export class TaskRunner<Row> {
  readonly #p: TaskRunnerParts<Row>;
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
  #handlers = 0;

  constructor(parts: TaskRunnerParts<Row>) {
    this.#p = parts;
  }

  /** Tasks held now (buffered, running, or being finalized). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Handlers running now (at most `concurrency`). */
  get running(): number {
    return this.#handlers;
  }

  /** Claimed tasks waiting for a slot. */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** Tasks whose handler is done and whose fenced write is under way. */
  get writing(): number {
    return this.#inFlight.size - this.#handlers - this.#buffer.length;
  }

  /** The claimed tasks held now. */
  tasks(): Claimed<Row>[] {
    return [...this.#inFlight.values()].map((f) => f.task);
  }

  /** The leases the heartbeat extends: every task held, each by its own lease. */
  leases(): ExtendItem[] {
    return [...this.#inFlight.values()].map((f) => ({ id: f.task.id, leaseVersion: f.task.leaseVersion, leaseMs: f.settings.leaseMs }));
  }

  /** The heartbeat could not extend this lease. */
  heartbeatLost(token: LeaseToken): void {
    // a tick that raced a task's own fenced write is no news: the write reports the truth
    if (!this.#inFlight.get(tokenKey(token))?.writing) this.leaseLost(token);
  }

  /** Takes charge of a claimed task: runs it now if a slot is free, else buffers it. */
  accept(task: Claimed<Row>): void {
    const f: InFlight<Row> = {
      task,
      settings: this.#p.options.settingsFor(task),
      controller: new AbortController(),
      hooks: [],
      startedAt: 0,
      writing: false,
    };
    this.#inFlight.set(tokenKey(task), f);
    safeEmit(this.#p.emitter, 'task:claimed', { task });
    if (!this.#p.running()) {
      f.controller.abort(new ShutdownError());
      this.#live(f);
    } else if (this.#handlers < this.#p.options.concurrency) {
      this.#live(f);
    } else {
      this.#buffer.push(f);
    }
  }

  /** Gives buffered tasks back (they never started): straight back to pending. */
  releaseBuffered(): void {
    for (const f of this.#buffer.splice(0)) {
      f.controller.abort(new ShutdownError());
      this.#live(f);
    }
  }

  /** Aborts every running handler with `ShutdownError`; their tasks go back to pending. */
  abortAll(): void {
    for (const f of this.#inFlight.values()) f.controller.abort(new ShutdownError());
  }

  /** Resolves when no task is left (tasks claimed meanwhile included). */
  async drained(): Promise<void> {
    while (this.#lives.size > 0) await Promise.all(this.#lives);
  }

  /** Aborts a task whose lease moved on, and reports it. */
  leaseLost(token: LeaseToken): void {
    const f = this.#inFlight.get(tokenKey(token));
    if (!f || f.controller.signal.aborted) return;
    const error = new LeaseLostError(token.id, token.leaseVersion);
    f.controller.abort(error);
    this.#reportLeaseLost(f.task, error);
  }

  #live(f: InFlight<Row>): void {
    const life = this.#life(f).catch((error: unknown) => this.#p.onError(toError(error)));
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
      if (f.task.groupKey !== null || this.writing >= this.#p.options.concurrency) this.#p.wakeup.wake();
    }
  }

  async #runHandler(f: InFlight<Row>): Promise<{ thrown: unknown; threw: boolean }> {
    if (f.controller.signal.aborted) return { thrown: f.controller.signal.reason, threw: true };
    this.#handlers++;
    f.startedAt = performance.now();
    const timeoutMs = f.settings.handlerTimeoutMs;
    const timer = timeoutMs === null ? undefined : setTimeout(() => f.controller.abort(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    try {
      await runUntilAborted(() => this.#p.options.handle(f.task, this.#context(f)), f.controller.signal);
      return { thrown: undefined, threw: false };
    } catch (error) {
      return { thrown: error, threw: true };
    } finally {
      clearTimeout(timer);
      this.#handlers--;
      // the slot is free now: hand it to a buffered task, and let the loop refill the buffer
      const next = this.#p.running() ? this.#buffer.shift() : undefined;
      if (next) this.#live(next);
      this.#p.wakeup.wake();
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
      this.leaseLost(task);
      return;
    }
    const result = await this.#write(f, transition);
    if (result.won) emitOutcome(this.#p.emitter, this.#p.log, task, outcome, transition, result.status, performance.now() - f.startedAt);
  }

  /** Writes a fenced transition; a refusal is reported as a lost lease. */
  async #write(f: InFlight<Row>, transition: Transition): Promise<FinalizeResult> {
    const item = { id: f.task.id, leaseVersion: f.task.leaseVersion, transition, groupKey: f.task.groupKey };
    const result =
      transition.to === 'done' && f.hooks.length > 0
        ? await this.#p.finalizer.submitWithHooks(item, f.hooks)
        : await this.#p.finalizer.submit(item);
    if (!result.won) {
      const error = new LeaseLostError(f.task.id, f.task.leaseVersion, `finalize refused: task ${f.task.id} lease_version ${f.task.leaseVersion} moved on`);
      this.#reportLeaseLost(f.task, error);
    }
    return result;
  }

  /** Returns an unfinished task to pending, attempt refunded (the worker is stopping). */
  async #giveBack(f: InFlight<Row>): Promise<void> {
    const result = await this.#write(f, toReleased('released by a stopping worker'));
    if (result.won) safeEmit(this.#p.emitter, 'task:released', { task: f.task });
  }

  #context(f: InFlight<Row>): HandlerContext {
    return {
      signal: f.controller.signal,
      extendLease: async (lease?: Duration) => {
        const leaseMs = lease === undefined ? f.settings.leaseMs : parseDuration(lease, 'lease');
        const extended = await leaseExtendMany(this.#p.db, this.#p.options.table, [
          { id: f.task.id, leaseVersion: f.task.leaseVersion, leaseMs },
        ]);
        if (!extended.has(tokenKey(f.task))) {
          this.leaseLost(f.task);
          throw f.controller.signal.reason as LeaseLostError;
        }
      },
      onCommit: (hook) => void f.hooks.push(hook),
    };
  }

  // The effect may already have happened; whoever owns the task now repeats it, and the task id
  // lets downstream deduplicate. Never silent: an event, and a log line.
  #reportLeaseLost(task: Claimed<Row>, error: LeaseLostError): void {
    this.#p.log.write('warn', `lost lease: ${error.message}`, { ...this.#p.log.task(task), err: error });
    safeEmit(this.#p.emitter, 'task:lease-lost', { task, error });
  }
}
