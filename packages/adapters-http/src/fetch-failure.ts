import { toError } from '@leasehold/core/internal';
import { HttpRetryableError } from './http-errors.js';

/** What was going on when a request failed without a response. */
export interface FetchFailureContext {
  /** The dispatcher's signal (lease lost, shutdown). */
  readonly signal: AbortSignal | undefined;
  /** This request's own timeout signal. */
  readonly timeout: AbortSignal;
  readonly timeoutMs: number;
  /** `POST <origin><path>` for messages. */
  readonly target: string;
}

/**
 * The error a publisher throws when `fetch` or the body read failed: the dispatcher's own abort
 * reason when it asked us to stop (so a lost lease stays a lost lease), otherwise a retryable
 * timeout or network error. Network errors keep their cause; their text names the socket
 * error, never request headers.
 */
export function fetchFailure(error: unknown, context: FetchFailureContext): Error {
  if (context.signal?.aborted) {
    const reason: unknown = context.signal.reason;
    return reason instanceof Error && reason.name !== 'AbortError'
      ? reason
      : new HttpRetryableError(`${context.target} aborted by the dispatcher`, { cause: reason });
  }
  if (context.timeout.aborted) {
    return new HttpRetryableError(`${context.target} timed out after ${context.timeoutMs} ms`);
  }
  return new HttpRetryableError(`${context.target} failed: ${describeNetworkError(error)}`, { cause: error });
}

// undici reports `TypeError: fetch failed` with the socket error as its cause
function describeNetworkError(thrown: unknown): string {
  const error = toError(thrown);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  if (!cause) return error.message;
  const code = (cause as { code?: unknown }).code;
  return `${error.message}: ${cause.message}${typeof code === 'string' ? ` (${code})` : ''}`;
}
