import { assertNever, DeferError } from '@leasehold/core';
import { classifyResponse, type HttpClassification, type HttpResponseSummary } from './classify-response.js';
import { fetchFailure } from './fetch-failure.js';
import { HttpPermanentError, HttpRetryableError } from './http-errors.js';
import {
  normalizeHttpPublisherOptions,
  parseHttpUrl,
  sensitiveValues,
  type HttpPublisherOptions,
  type NormalizedHttpPublisherOptions,
} from './http-publisher-options.js';
import type { OutboxMessage, PublishContext, Publisher } from '@leasehold/outbox';
import { readBody } from './read-body.js';
import { describeUrl, redact } from './redact.js';
import { signWebhook } from './sign-webhook.js';

/**
 * A {@link Publisher} that POSTs each message as JSON. It exposes nothing but `publish`, so
 * logging it cannot print a secret or a credential header.
 */
export type HttpPublisher = Publisher;

/** A request ready to send: where, what, and the texts to scrub from any error about it. */
interface PreparedRequest {
  readonly url: URL;
  readonly target: string;
  readonly headers: Headers;
  readonly body: string;
  readonly scrub: readonly string[];
}

/**
 * An outbox publisher that POSTs each message as JSON over Node's `fetch`. Every request carries
 * the message id as `Idempotency-Key` (and in the body, and as `webhook-id` when signed), has
 * its own timeout that the dispatcher's signal also aborts, does not follow redirects, and ends
 * in one of the verdicts of {@link classifyResponse}: success, or a thrown `RetryableError`
 * (with `retryAfterMs` from `Retry-After`), `PermanentError` or `DeferError`. Secrets and
 * credential headers never appear in what it throws.
 *
 * @example
 * const publisher = httpPublisher({
 *   url: 'https://billing.example.com/webhooks/leasehold',
 *   signingSecrets: [process.env.WEBHOOK_SECRET!],
 *   timeout: '5s',
 * });
 * // hand it to the outbox dispatcher, or to a core worker through publisherTaskHandler(publisher)
 */
export function httpPublisher(options: HttpPublisherOptions): HttpPublisher {
  const normalized = normalizeHttpPublisherOptions(options);
  return Object.freeze({
    publish: (message: OutboxMessage, context?: PublishContext) => publish(normalized, message, context),
  });
}

async function publish(options: NormalizedHttpPublisherOptions, message: OutboxMessage, context?: PublishContext): Promise<void> {
  let scrub = options.scrub;
  try {
    const request = prepare(options, message);
    scrub = request.scrub;
    const summary = await send(options, request, context?.signal);
    const verdict = options.classify?.(summary, message) ?? classifyResponse(summary, {
      conflict: options.conflict,
      maxRetryAfterMs: options.maxRetryAfterMs,
      excerptLength: options.excerptLength,
    });
    throwUnlessSuccess(verdict, request.target, summary.status);
  } catch (error) {
    throw scrubbed(error, scrub);
  }
}

async function send(options: NormalizedHttpPublisherOptions, request: PreparedRequest, signal: AbortSignal | undefined): Promise<HttpResponseSummary> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    // redirect: 'manual' so a 3xx is seen and classified, never silently re-sent elsewhere
    const response = await fetch(request.url, { method: 'POST', headers: request.headers, body: request.body, redirect: 'manual', signal: combined });
    const body = await readBody(response, options.maxBodyBytes);
    return { status: response.status, statusText: response.statusText, headers: response.headers, body };
  } catch (error) {
    throw fetchFailure(error, { signal, timeout, timeoutMs: options.timeoutMs, target: request.target });
  }
}

function prepare(options: NormalizedHttpPublisherOptions, message: OutboxMessage): PreparedRequest {
  const url = resolveUrl(options, message);
  const target = `POST ${options.hideUrlPath ? url.origin : describeUrl(url)}`;
  const extra = typeof options.headers === 'function' ? options.headers(message) : (options.headers ?? {});
  const scrub = [...options.scrub, ...(typeof options.headers === 'function' ? sensitiveValues(extra) : [])];
  let body: string;
  try {
    body = JSON.stringify(options.body(message));
  } catch (error) {
    throw new HttpPermanentError(`${target}: message ${message.id} cannot be serialised as JSON`, { cause: error });
  }
  const headers = buildHeaders([message.headers, extra], target, scrub);
  headers.set('content-type', 'application/json');
  headers.set(options.idempotencyHeader, message.id);
  if (options.keys.length > 0) {
    for (const [name, value] of Object.entries(signWebhook({ id: message.id, body }, options.keys))) headers.set(name, value);
  }
  return { url, target, headers, body, scrub };
}

function resolveUrl(options: NormalizedHttpPublisherOptions, message: OutboxMessage): URL {
  if (typeof options.url !== 'function') return options.url;
  try {
    return parseHttpUrl(options.url(message), 'url(message)');
  } catch (error) {
    throw new HttpPermanentError(`no URL for message ${message.id}: ${(error as Error).message}`);
  }
}

// Headers() would echo an invalid value in its error: check each one here and name only the header
function buildHeaders(sources: ReadonlyArray<Readonly<Record<string, string>>>, target: string, scrub: readonly string[]): Headers {
  const headers = new Headers({ 'user-agent': 'leasehold-adapters-http' });
  for (const source of sources) {
    for (const [name, value] of Object.entries(source)) {
      try {
        headers.set(name, value);
      } catch {
        throw new HttpPermanentError(redact(`${target}: invalid value for header \`${name}\` (not shown)`, scrub));
      }
    }
  }
  return headers;
}

function throwUnlessSuccess(verdict: HttpClassification, target: string, status: number): void {
  switch (verdict.kind) {
    case 'success':
      return;
    case 'retryable':
      throw new HttpRetryableError(`${target} → ${verdict.reason}`, { status, retryAfterMs: verdict.retryAfterMs });
    case 'permanent':
      throw new HttpPermanentError(`${target} → ${verdict.reason}`, { status });
    case 'defer':
      throw new DeferError(verdict.delay, `${target} → ${verdict.reason}`);
    default:
      // a classify hook written in JavaScript can return anything
      assertNever(verdict);
  }
}

// The last line of defence: whatever was thrown above (or by a user hook) leaves without a secret.
function scrubbed(thrown: unknown, scrub: readonly string[]): unknown {
  if (!(thrown instanceof Error) || scrub.length === 0) return thrown;
  const message = redact(thrown.message, scrub);
  const stack = thrown.stack === undefined ? undefined : redact(thrown.stack, scrub);
  if (message !== thrown.message) Object.defineProperty(thrown, 'message', { value: message, configurable: true, writable: true });
  if (stack !== thrown.stack) Object.defineProperty(thrown, 'stack', { value: stack, configurable: true, writable: true });
  return thrown;
}
