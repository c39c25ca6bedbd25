import type { Outcome } from '../outcome.js';
import type { LeaseToken } from '../primitives.js';
import type { FinalizeResult } from '../sql/lease-finalize-many.js';
import type { Claimed } from '../sql/lease-row.js';
import type { TaskTelemetry } from '../telemetry/worker-telemetry.js';
import { toDone, type Transition } from '../transition.js';
import type { CommitHook, QueuedWrite } from './finalizer.js';
import type { RunSettings } from './settings.js';
import { TaskAbort } from './task-abort.js';

/** The runner a {@link Held} task reports back to (see `TaskRunner`). @internal */
export interface HeldBy<Row> {
  /** An abort ended the wait for the running handler of `h`. */
  handlerAborted(h: Held<Row>, reason: unknown): void;
  /** The fenced write of `h` ended (see {@link QueuedWrite.finalized}). */
  finalized(h: Held<Row>, result: FinalizeResult | undefined, error?: Error): void;
}

/**
 * One claimed task, from its claim to its fenced write: its abort (see {@link TaskAbort}) and, once
 * the handler is done, the fenced write the finalizer queues ({@link QueuedWrite}). One object per
 * task, reporting back to its runner through methods rather than closures made per task.
 * @internal
 */
export class Held<Row> extends TaskAbort implements QueuedWrite {
  readonly id: string;
  readonly leaseVersion: number;
  readonly groupKey: string | null;
  /** A child task (core's task table) may wake its parent when it ends. */
  readonly parentId: string | null;
  /** It runs under a limit (its claim said so): see `FinalizeItem.limited`. */
  limited = false;
  /** What the fenced write writes; set when the handler is done. */
  transition: Transition = DONE;
  /** What the handler's end was classified as ({@link RELEASED}: given back by a stopping worker). */
  outcome: Outcome | typeof RELEASED = SUCCESS;
  /** The write hands the task's group its next head (see `TaskRunner.settling`). */
  settles = false;
  hooks: CommitHook[] | undefined;
  /**
   * When the handler started (`performance.now()`). NaN until then, a double: a field that
   * starts as a small integer and then holds a double deoptimizes the code that wrote it.
   */
  startedAt = Number.NaN;
  /** The handler is running: an abort ends the wait for it. */
  waiting = false;
  /** The handler is done and its fenced write is under way: that write's result decides. */
  writing = false;
  /** Its span and figures, when an OpenTelemetry SDK is registered. */
  tel: TaskTelemetry<Row> | undefined;
  /** What the handler returned, as JSON text (typed tasks), stored with `done`. */
  resultJson: string | null = null;
  /** The run parked (a workflow's wait): its row is written already, nothing more is. */
  suspended = false;
  /** Asked when the handler returns (see `RunnerControl.onReturn`). */
  returnCheck: (() => Error | undefined) | undefined = undefined;
  /** The handler gave its slot back while it waits for a write (see `RunnerControl.release`). */
  released = false;
  /** The handler returned, threw or was aborted: what came first is what counts. */
  ended = false;
  /** Aborts the handler after `handlerTimeout`, when one is set. */
  timer: NodeJS.Timeout | undefined;
  /** Its life has ended: no longer held, counted out. */
  over = false;
  /**
   * Claimed ahead of its time (`LeaseClaimResult.ahead`): when it comes due (`performance.now()`),
   * NaN otherwise; and the timer that hands it to a slot then.
   */
  dueAt = Number.NaN;
  dueTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly runner: HeldBy<Row>,
    readonly task: Claimed<Row>,
    readonly settings: RunSettings,
  ) {
    super();
    this.id = task.id;
    this.leaseVersion = task.leaseVersion;
    this.groupKey = task.groupKey;
    this.parentId = (task as { readonly parentId?: string | null }).parentId ?? null;
  }

  /** Is this the claim that `token` names? */
  holds(token: LeaseToken): boolean {
    return this.id === String(token.id) && this.leaseVersion === Number(token.leaseVersion);
  }

  protected override onAborted(reason: unknown): void {
    // deferred a microtask: whoever aborts finishes its own work (reporting a lost lease, say) first
    if (this.waiting) queueMicrotask(() => this.runner.handlerAborted(this, reason));
  }

  finalized(result: FinalizeResult | undefined, error?: Error): void {
    this.runner.finalized(this, result, error);
  }
}

/** A task a stopping worker gave back (its outcome, for the write's report). */
export const RELEASED = Symbol('released');
/** The outcome of a handler that returned. */
export const SUCCESS: Outcome = Object.freeze({ kind: 'success' });
/** The write of a task done without a result. */
export const DONE = toDone();
