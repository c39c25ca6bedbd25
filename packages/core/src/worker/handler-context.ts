import type { Duration } from '../duration.js';
import type { CommitHook } from './finalizer.js';

/** What a running handler gets besides its row. */
export interface HandlerContext {
  /**
   * Fires when the handler must stop: its lease was lost (`LeaseLostError`), its time ran out
   * (`HandlerTimeoutError`) or the worker is shutting down (`ShutdownError`); `signal.reason`
   * says which. Pass it to fetch, database calls and timers.
   */
  readonly signal: AbortSignal;
  /**
   * Extends this task's lease now (the heartbeat also does so on its own). Throws
   * `LeaseLostError` when the fencing token moved on; the signal fires too.
   */
  extendLease(lease?: Duration): Promise<void>;
  /**
   * Runs `hook` in the transaction that writes this task's fenced completion, only if the fence
   * lets it through; if it refuses, the hook's writes roll back with it.
   */
  onCommit(hook: CommitHook): void;
}

/**
 * What core's typed tasks tell the runner beyond the public context: found on the runner's
 * context under this symbol. @internal
 */
export const RUNNER_CONTROL: unique symbol = Symbol('leasehold.runner-control');

/** @internal */
export interface RunnerControl {
  /**
   * The run parked (its row is `waiting` or was handed back as `pending`, written already): the
   * handler's signal fires with `reason`, nothing more is written for this run. `dueInMs`: when
   * the park has a wake time (a sleep, a wait's deadline), in how many ms it comes due by the
   * database's clock (its `available_at - now()` as the park wrote it), so the worker wakes for
   * it on time.
   */
  suspended(reason: Error, dueInMs?: number): void;
  /**
   * The run cannot go on (a workflow's code does not replay what it recorded): the handler's
   * signal fires with `reason`, and the task's outcome is `reason`, whatever the handler does
   * after it.
   */
  failed(reason: Error): void;
  /**
   * `check` runs when the handler returns, before its success is written: an error it returns
   * is the task's outcome instead.
   */
  onReturn(check: () => Error | undefined): void;
  /**
   * The run is about to wait for a write of the worker's own (a workflow step's record) and runs
   * none of its code until it has the answer: its slot goes to the next task meanwhile, as a
   * parked run's does. The function returned takes a slot back, and resolves once the run holds
   * one (at once while one is free, else at the next one that frees, ahead of buffered tasks);
   * call it before the run's code goes on. A run that ended meanwhile (aborted, say) takes none.
   * Absent where the runner lends no slots.
   */
  release?(): () => Promise<void>;
}

/** The runner's control of a context made by the worker runtime, if it is one. @internal */
export function runnerControl(ctx: HandlerContext): RunnerControl | undefined {
  return (ctx as Partial<Record<typeof RUNNER_CONTROL, RunnerControl>>)[RUNNER_CONTROL];
}
