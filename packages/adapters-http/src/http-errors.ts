import { PermanentError, RetryableError } from '@leasehold/core';

/**
 * A delivery that may succeed later (408, 425, 429, 5xx, network error, timeout). Its `code` is
 * core's `RETRYABLE`, so the dispatcher backs off, no earlier than `retryAfterMs`.
 */
export class HttpRetryableError extends RetryableError {
  /** The response status, or `undefined` when no response came (network error, timeout). */
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { retryAfterMs: options.retryAfterMs, cause: options.cause });
    this.status = options.status;
  }
}

/**
 * A delivery that retrying cannot fix (3xx, most 4xx, a bad URL). Its `code` is core's
 * `PERMANENT`, so the message goes dead with this error's text in `last_error`.
 */
export class HttpPermanentError extends PermanentError {
  /** The response status, or `undefined` when the request could not be made at all. */
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = options.status;
  }
}
