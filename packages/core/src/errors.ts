import { MAX_DELAY_MS, parseDuration } from './duration.js';
import { ERROR_CODES, LeaseholdError, type ErrorCode } from './leasehold-error.js';

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

/** A payload failed its task's validator. At enqueue it is thrown; at run time the task goes dead. */
export class PayloadValidationError extends LeaseholdError {
  readonly taskName: string;

  constructor(taskName: string, cause: unknown) {
    super('PAYLOAD_VALIDATION', `invalid payload for task "${taskName}": ${toError(cause).message}`, {
      cause,
    });
    this.taskName = taskName;
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
