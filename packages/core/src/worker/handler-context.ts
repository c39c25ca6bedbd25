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
