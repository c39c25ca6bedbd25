import type { Duration } from '@leasehold/core';
import { checkOptionKeys, optionKeys } from '@leasehold/core/internal';
import { retryAfterMs } from './retry-after.js';

/** What a publisher saw of an HTTP response: enough to classify it, read once and bounded. */
export interface HttpResponseSummary {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  /** The body as text, cut at the publisher's `maxBodyBytes`. */
  readonly body: string;
}

/**
 * The verdict on one delivery, as a union on `kind`. `retryable` and `permanent` become
 * `RetryableError` / `PermanentError` for the dispatcher; `defer` becomes `DeferError`.
 */
export type HttpClassification =
  | { readonly kind: 'success' }
  | { readonly kind: 'retryable'; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: 'permanent'; readonly reason: string }
  | { readonly kind: 'defer'; readonly delay: Duration; readonly reason: string };

/** How a `409 Conflict` is read. */
export type ConflictPolicy = 'success' | 'retryable' | 'permanent';

/** Options of {@link classifyResponse}. */
export interface ClassifyResponseOptions {
  /**
   * `409 Conflict`: `'success'` reads it as "already in the target state" (the receiver has
   * applied this message before); `'retryable'` or `'permanent'` otherwise.
   * @defaultValue 'success'
   */
  conflict?: ConflictPolicy;
  /** The client's clock, ms since the epoch; used for a `Retry-After` date without `Date`. @defaultValue Date.now() */
  nowMs?: number;
  /** Longest `Retry-After` honoured, in ms; longer ones are cut to it. @defaultValue 3600000 */
  maxRetryAfterMs?: number;
  /** Characters of the body kept in the reason. @defaultValue 500 */
  excerptLength?: number;
}

/** Statuses that say "try again later" (RFC 9110, RFC 8470, RFC 6585) besides the 5xx range. */
const RETRYABLE_4XX = new Set([408, 425, 429]);

const CLASSIFY_OPTIONS = optionKeys<ClassifyResponseOptions>()('classifyResponse', ['conflict', 'nowMs', 'maxRetryAfterMs', 'excerptLength']);

/**
 * Classifies an HTTP response, purely: 2xx → success; 408, 425, 429, 5xx → retryable, with
 * `Retry-After` (seconds or HTTP date) as the earliest next attempt; 409 → `conflict`; every
 * other status (3xx, 4xx) → permanent. Reasons carry the status and a bounded body excerpt.
 *
 * @example
 * classifyResponse({ status: 503, statusText: '', headers: new Headers({ 'retry-after': '30' }), body: '' });
 * // { kind: 'retryable', reason: 'HTTP 503', retryAfterMs: 30000 }
 */
export function classifyResponse(response: HttpResponseSummary, options: ClassifyResponseOptions = {}): HttpClassification {
  checkOptionKeys(options, CLASSIFY_OPTIONS);
  const { status } = response;
  if (status >= 200 && status <= 299) return { kind: 'success' };
  const reason = describeResponse(response, options.excerptLength ?? 500);
  if (status === 409) {
    const conflict = options.conflict ?? 'success';
    if (conflict === 'success') return { kind: 'success' };
    if (conflict === 'permanent') return { kind: 'permanent', reason };
  } else if (!RETRYABLE_4XX.has(status) && !(status >= 500 && status <= 599)) {
    // 3xx is not followed (a webhook must not be re-sent somewhere else silently), 4xx is ours to fix
    return { kind: 'permanent', reason: status >= 300 && status <= 399 ? describeRedirect(reason, response) : reason };
  }
  const delay = retryAfterMs(response.headers.get('retry-after'), {
    nowMs: options.nowMs ?? Date.now(),
    date: response.headers.get('date'),
  });
  if (delay === undefined) return { kind: 'retryable', reason };
  return { kind: 'retryable', reason, retryAfterMs: Math.min(delay, options.maxRetryAfterMs ?? 3_600_000) };
}

/** `HTTP 503 Service Unavailable: <first characters of the body>`, whitespace collapsed. */
export function describeResponse(response: HttpResponseSummary, excerptLength = 500): string {
  const head = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  const body = response.body.replace(/\s+/g, ' ').trim();
  if (!body || excerptLength <= 0) return head;
  const excerpt = body.length > excerptLength ? `${body.slice(0, excerptLength)}…` : body;
  return `${head}: ${excerpt}`;
}

// the Location's query is dropped: it may carry a token
function describeRedirect(reason: string, response: HttpResponseSummary): string {
  const location = response.headers.get('location')?.split(/[?#]/)[0];
  return `${reason} (redirect${location ? ` to ${location}` : ''} not followed)`;
}
