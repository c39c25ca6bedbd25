/**
 * A fenced state change after a claim. Build one only with {@link toDone}, {@link toRetry},
 * {@link toDeferred} or {@link toDead}, so every change sets the columns it must.
 */
export type Transition =
  | {
      readonly to: 'done';
      /** What the handler returned, as JSON text (stored in `result`); null for nothing. */
      readonly resultJson: string | null;
    }
  | {
      readonly to: 'pending';
      readonly delayMs: number;
      readonly error: string | null;
      /** Give back the attempt the claim took (defer, shutdown). */
      readonly refund: boolean;
      /** Dead instead, once the row would be older than this (bounds total defer time). */
      readonly maxAgeMs: number | null;
    }
  | { readonly to: 'dead'; readonly error: string };

/** Finished, with the handler's result as JSON text (or null). */
export function toDone(resultJson: string | null = null): Transition {
  return resultJson === null ? DONE : { to: 'done', resultJson };
}

/** Back to pending after a backoff `delayMs`, spending the attempt. */
export function toRetry(delayMs: number, error: string): Transition {
  return { to: 'pending', delayMs, error, refund: false, maxAgeMs: null };
}

/**
 * Back to pending after `delayMs` with the attempt refunded; dead instead once the row would be
 * older than `maxAgeMs` when it next becomes due.
 */
export function toDeferred(delayMs: number, reason: string, maxAgeMs: number | null = null): Transition {
  return { to: 'pending', delayMs, error: `deferred: ${reason}`, refund: true, maxAgeMs };
}

/**
 * Returned to pending, attempt refunded: the worker gave the task back (shutdown). Due at once,
 * or after `delayMs` for a task claimed ahead of its time.
 */
export function toReleased(reason: string, delayMs = 0): Transition {
  return { to: 'pending', delayMs, error: reason, refund: true, maxAgeMs: null };
}

/** Needs a person. */
export function toDead(error: string): Transition {
  return { to: 'dead', error };
}

const DONE: Transition = Object.freeze({ to: 'done', resultJson: null });
