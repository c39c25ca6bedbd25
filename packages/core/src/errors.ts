import { MAX_DELAY_MS, parseDuration } from './duration.js';
import { ConfigError, ERROR_CODES, LeaseholdError, type ErrorCode } from './leasehold-error.js';

export { ERROR_CODES, type ErrorCode, LeaseholdError, ConfigError } from './leasehold-error.js';

/** A transient failure (timeout, 5xx, 429): retried after full-jitter backoff. */
export class RetryableError extends LeaseholdError {
  /** Earliest next attempt, in ms from now, when the failure said so (e.g. `Retry-After`). */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super('RETRYABLE', message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** A failure that retrying cannot fix (validation error, missing target): the task goes dead. */
export class PermanentError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PERMANENT', message, options);
  }
}

/**
 * Not yet possible for a business reason: run again after `delayMs` without spending an attempt.
 *
 * @example
 * throw new DeferError('30s', 'customer account not created yet');
 */
export class DeferError extends LeaseholdError {
  readonly delayMs: number;
  readonly reason: string;

  constructor(delay: number | string, reason: string) {
    super('DEFER', reason);
    this.delayMs = deferDelayMs(delay);
    this.reason = reason;
  }
}

/** The task's fencing token moved on: another worker owns it now, so this result is not written. */
export class LeaseLostError extends LeaseholdError {
  readonly taskId: string;
  readonly leaseVersion: number;

  constructor(taskId: string, leaseVersion: number, message = `lease lost on task ${taskId}`) {
    super('LEASE_LOST', message);
    this.taskId = taskId;
    this.leaseVersion = leaseVersion;
  }
}

/**
 * A payload failed its task's validator, or is not JSON that comes back as it went in (a `Date`,
 * a `Map`, `NaN`, a function…: packages/core/README.md, "Payloads are JSON"). At enqueue it is thrown and
 * nothing is stored; at run time the task goes dead.
 */
export class PayloadValidationError extends LeaseholdError {
  readonly taskName: string;
  /** Where in the payload the fault is, when known: `payload.when`, `payload.items[2]`. */
  readonly path: string | undefined;

  constructor(taskName: string, cause: unknown) {
    super('PAYLOAD_VALIDATION', `invalid payload for task "${taskName}": ${toError(cause).message}`, {
      cause,
    });
    this.taskName = taskName;
    this.path = cause instanceof ConfigError ? cause.option : undefined;
  }
}

/** A handler ran past its task's `handlerTimeout`; counted as a retryable failure. */
export class HandlerTimeoutError extends LeaseholdError {
  constructor(timeoutMs: number) {
    super('HANDLER_TIMEOUT', `handler timed out after ${timeoutMs} ms`);
  }
}

/** The worker is stopping; the task goes back to pending with its attempt refunded. */
export class ShutdownError extends LeaseholdError {
  constructor() {
    super('SHUTDOWN', 'worker is shutting down');
  }
}

/**
 * The task was cancelled (`cancelTask`, or its parent's cancel): the reason of a running
 * handler's `signal`. Its writes are refused from then on; the task stays `cancelled`.
 */
export class CancelledError extends LeaseholdError {
  readonly taskId: string;

  constructor(taskId: string) {
    super('CANCELLED', `task ${taskId} was cancelled`);
    this.taskId = taskId;
  }
}

/**
 * This run of a workflow parked (a sleep, a wait for children or a signal) and will run again
 * when the wait ends; what it recorded so far is kept. Thrown out of `ctx.sleep`, `ctx.waitFor…`
 * to end the run: let it through (a `catch` that swallows it cannot keep the run going: its
 * signal has fired and its writes are refused).
 */
export class SuspendedError extends LeaseholdError {
  constructor(readonly waitFor: string) {
    super('SUSPENDED', `the workflow parked (${waitFor}) and runs again when that wait ends`);
  }
}

/** One child task that ended without a result, as {@link ChildTaskError} reports it. */
export interface ChildFailure {
  readonly id: string;
  readonly name: string;
  readonly status: 'dead' | 'cancelled';
  /** Its last error (dead) or why it was cancelled, as stored. */
  readonly error: string | null;
}

/**
 * A child task the workflow waited for went dead or was cancelled: thrown by
 * `ctx.waitForChildren`. Catch it to compensate; uncaught, it fails the parent like any error.
 */
export class ChildTaskError extends LeaseholdError {
  readonly failures: readonly ChildFailure[];

  constructor(failures: readonly ChildFailure[]) {
    const first = failures[0];
    super('CHILD_FAILED', `${failures.length} child task(s) failed; first: ${first?.name} ${first?.id} ${first?.status}: ${first?.error ?? ''}`.trim());
    this.failures = failures;
  }
}

/** The task ended without a result: `waitForResult` rejects with this. */
export class TaskFailedError extends LeaseholdError {
  constructor(
    readonly taskId: string,
    readonly status: 'dead' | 'cancelled',
    /** Its last error (dead), or why it was cancelled. */
    readonly error: string | null,
  ) {
    super('TASK_FAILED', `task ${taskId} ended ${status}${error === null ? '' : `: ${error.split('\n', 1)[0]}`}`);
  }
}

/** No task has this id (in this schema). */
export class TaskNotFoundError extends LeaseholdError {
  constructor(readonly taskId: string) {
    super('NOT_FOUND', `no task ${taskId}`);
  }
}

/** `waitForResult` gave up after its `timeout`; the task itself is untouched. */
export class WaitTimeoutError extends LeaseholdError {
  constructor(readonly taskId: string, timeoutMs: number) {
    super('WAIT_TIMEOUT', `task ${taskId} did not end within ${timeoutMs} ms`);
  }
}

/**
 * `start()` was called on a worker, dispatcher or scheduler that was started before (it is
 * running, stopping or stopped). Each starts once: to run again after `stop()`, create a new one.
 * A `start()` that was refused (a `DatabaseNotReadyError`) left it as new: that one can be
 * started again.
 */
export class WorkerStateError extends LeaseholdError {
  constructor(
    /** What was started: `worker`, `scheduler`. */
    readonly kind: string,
    readonly owner: string,
    /** Where it was when `start()` came. */
    readonly state: 'running' | 'stopping' | 'stopped',
  ) {
    super(
      'WORKER_STATE',
      state === 'running'
        ? `${kind} ${owner} was already started`
        : `${kind} ${owner} was ${state}: a ${kind} starts once; create a new one to start again`,
    );
  }
}

/** What made one record of a workflow run: a step, a database step, a sleep, a spawn, a signal wait, a patch marker or a progress event (`ctx.setEvent`). */
export type RecordKind = 'step' | 'db' | 'sleep' | 'spawn' | 'signal' | 'patch' | 'event';

/** One recorded call of a workflow run, or one call its code made, as {@link NonDeterminismError} reports it. */
export interface RecordedCall {
  readonly name: string;
  readonly kind: RecordKind;
}

/**
 * The workflow's code no longer makes the calls its run recorded (docs/workflows.md, "Changing
 * workflow code"): at `position` the run recorded `recorded` and the code asked for `requested`
 * (either is null when there was nothing there). The task goes dead with this message and keeps
 * every recorded step; deploy code that makes the recorded calls again (or guards the change with
 * `ctx.patched` or a task version), then `leasehold dead retry <id>` resumes it.
 */
export class NonDeterminismError extends LeaseholdError {
  constructor(
    readonly taskId: string,
    readonly taskName: string,
    readonly position: number,
    readonly recorded: RecordedCall | null,
    readonly requested: RecordedCall | null,
    detail?: string,
  ) {
    super(
      'NON_DETERMINISM',
      `task ${taskId} (${taskName}) does not replay at position ${position}: the run recorded ${describeCall(recorded)}, the code ${requested === null ? 'made no such call' : `asked for ${describeCall(requested)}`}` +
        `${detail === undefined ? '' : ` (${detail})`}. The code changed under a run in flight: deploy code that makes the recorded calls, or guard the change with ctx.patched() or a task version, then retry the dead task (leasehold dead retry ${taskId}).`,
    );
  }
}

function describeCall(call: RecordedCall | null): string {
  return call === null ? 'nothing' : `${call.kind} "${call.name}"`;
}

/**
 * True when `value` is a leasehold error, optionally of one `code`. Matches on `code`, so it
 * works across duplicate copies of the package.
 */
export function isLeaseholdError<C extends ErrorCode>(
  value: unknown,
  code?: C,
): value is LeaseholdError & { code: C } {
  if (typeof value !== 'object' || value === null) return false;
  const c = (value as { code?: unknown }).code;
  return (
    value instanceof Error &&
    typeof c === 'string' &&
    (ERROR_CODES as readonly string[]).includes(c) &&
    (code === undefined || c === code)
  );
}

/** Any thrown value as an `Error`, so every `catch` can report a message and a stack. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  if (typeof value === 'string') return new Error(value);
  try {
    return new Error(`non-error thrown: ${JSON.stringify(value)}`);
  } catch {
    return new Error(`non-error thrown: ${String(value)}`);
  }
}

function deferDelayMs(delay: number | string): number {
  return parseDuration(delay, 'delay', { allowZero: true, max: MAX_DELAY_MS });
}
