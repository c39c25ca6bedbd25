import { DeferError } from '@leasehold/core';
import { assertNever, currentTraceHeaders, withSpan } from '@leasehold/core/internal';
import { classifyResponse, type HttpClassification, type HttpResponseSummary } from './classify-response.js';
import { fetchFailure } from './fetch-failure.js';
import { HttpPermanentError, HttpRetryableError } from './http-errors.js';
import { httpHeaderFault } from './http-headers.js';
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
  // the event's own credential headers are as secret as the publisher's: a receiver that echoes
  // the request must not get them into last_error
  let scrub = [...options.scrub, ...sensitiveValues(message.headers ?? {})];
  try {
    const request = prepare(options, message, scrub);
    scrub = [...request.scrub];
    // a child of the dispatcher's span when one is active, else of the producer's stored context
    const span = { kind: 'producer', attributes: publishAttributes(message, request), parentHeaders: message.headers, preferActive: true } as const;
    const received = await withSpan(`publish ${message.eventType}`, span, async () => {
      // the publish span's context replaces the trace context stored with the event (the
      // producer's), so the receiver's span is this one's child, in the same trace
      for (const [name, value] of Object.entries(await currentTraceHeaders())) request.headers.set(name, value);
      return send(options, request, context?.signal);
    });
    // redacted before anyone cuts an excerpt from it: a secret cut in half no longer matches
    const summary = { ...received, body: redact(received.body, scrub) };
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

function prepare(options: NormalizedHttpPublisherOptions, message: OutboxMessage, known: readonly string[]): PreparedRequest {
  const url = resolveUrl(options, message);
  const target = `POST ${options.hideUrlPath ? url.origin : describeUrl(url)}`;
  const computed = typeof options.headers === 'function';
  const extra = typeof options.headers === 'function' ? options.headers(message) : (options.headers ?? {});
  const scrub = [...known, ...(computed ? sensitiveValues(extra) : [])];
  let body: string;
  try {
    body = JSON.stringify(options.body(message));
  } catch (error) {
    throw new HttpPermanentError(`${target}: message ${message.id} cannot be serialised as JSON`, { cause: error });
  }
  const headers = buildHeaders(
    [
      ['message.headers', message.headers ?? {}],
      [computed ? 'headers(message)' : 'headers', extra],
    ],
    target,
    scrub,
  );
  headers.set('content-type', 'application/json');
  headers.set(options.idempotencyHeader, message.id);
  if (options.keys.length > 0) {
    for (const [name, value] of Object.entries(signWebhook({ id: message.id, body }, options.keys))) headers.set(name, value);
  }
  return { url, target, headers, body, scrub };
}

// OpenTelemetry messaging conventions; the URL's origin only (its path may hold a token)
function publishAttributes(message: OutboxMessage, request: PreparedRequest) {
  return {
    'messaging.system': 'http',
    'messaging.operation.type': 'send',
    'messaging.destination.name': message.eventType,
    'messaging.message.id': message.id,
    'http.request.method': 'POST',
    'server.address': request.url.hostname,
  };
}

function resolveUrl(options: NormalizedHttpPublisherOptions, message: OutboxMessage): URL {
  if (typeof options.url !== 'function') return options.url;
  try {
    return parseHttpUrl(options.url(message), 'url(message)');
  } catch (error) {
    throw new HttpPermanentError(`no URL for message ${message.id}: ${(error as Error).message}`);
  }
}

// Headers() would echo an invalid value in its error: check each one first and name only the
// header. Fixed headers were checked at construction; the message's own and computed ones can
// only be checked here, and retrying cannot fix them.
function buildHeaders(
  sources: ReadonlyArray<readonly [string, Readonly<Record<string, string>>]>,
  target: string,
  scrub: readonly string[],
): Headers {
  const headers = new Headers({ 'user-agent': 'leasehold-adapters-http' });
  for (const [source, record] of sources) {
    for (const [name, value] of Object.entries(record)) {
      const fault = typeof value === 'string' ? httpHeaderFault(name, value) : 'is not a string';
      if (fault) throw new HttpPermanentError(redact(`${target}: header \`${source}.${name}\` ${fault}`, scrub));
      headers.set(name, value);
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

// The last line of defence: whatever was thrown above (or by a user hook) leaves without a
// secret: in its message, its stack, a DeferError's reason (what last_error records for a
// deferral), and the same along its chain of causes.
function scrubbed(thrown: unknown, scrub: readonly string[]): unknown {
  if (scrub.length === 0) return thrown;
  let error: unknown = thrown;
  for (let depth = 0; error instanceof Error && depth < 8; depth++) {
    for (const field of ['message', 'stack', 'reason'] as const) {
      const text: unknown = (error as unknown as Record<string, unknown>)[field];
      if (typeof text !== 'string') continue;
      const clean = redact(text, scrub);
      if (clean !== text) Object.defineProperty(error, field, { value: clean, configurable: true, writable: true });
    }
    error = error.cause;
  }
  return thrown;
}
