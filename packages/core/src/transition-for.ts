import { fullJitterBackoff, type BackoffPolicy } from './backoff.js';
import { assertNever, describeError, type Outcome } from './outcome.js';
import { toDead, toDeferred, toDone, toRetry, type Transition } from './transition.js';

/** Retry settings that decide where an outcome sends a task. */
export interface RetryPolicy {
  readonly backoff: BackoffPolicy;
  /** Bound on a task's age for deferrals, in ms; null for none. */
  readonly maxDeferAgeMs: number | null;
}

/**
 * The fenced state change an outcome calls for, or null when nothing may be written (the lease
 * was lost). Pure: the same inputs always give the same kind of transition.
 */
export function transitionFor(
  outcome: Outcome,
  task: { readonly attempts: number; readonly maxAttempts: number },
  policy: RetryPolicy,
  random: () => number = Math.random,
): Transition | null {
  switch (outcome.kind) {
    case 'success':
      return toDone();
    case 'retryable': {
      const error = describeError(outcome.error);
      if (task.attempts >= task.maxAttempts) return toDead(`retries exhausted: ${error}`);
      const backoffMs = fullJitterBackoff(task.attempts, policy.backoff, random);
      return toRetry(Math.max(backoffMs, outcome.retryAfterMs ?? 0), error);
    }
    case 'defer':
      return toDeferred(outcome.delayMs, outcome.reason, policy.maxDeferAgeMs);
    case 'permanent':
      return toDead(describeError(outcome.error));
    case 'lease-lost':
      return null;
    default:
      return assertNever(outcome);
  }
}
