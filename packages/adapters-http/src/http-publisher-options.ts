import { ConfigError, INTEGER_RANGES, type Duration } from '@leasehold/core';
import { checkInteger, checkOptionKeys, optionKeys, parseDuration } from '@leasehold/core/internal';
import type { ConflictPolicy, HttpClassification, HttpResponseSummary } from './classify-response.js';
import { webhookEnvelope } from './envelope.js';
import { checkHttpHeaders, httpHeaderFault } from './http-headers.js';
import type { OutboxMessage } from '@leasehold/outbox';
import { parseWebhookSecrets, secretTexts, type WebhookKey } from './webhook-secret.js';

/** Header values, fixed or computed per message. */
export type HeadersOption = Readonly<Record<string, string>> | ((message: OutboxMessage) => Readonly<Record<string, string>>);

/** Options of {@link httpPublisher}. */
export interface HttpPublisherOptions {
  /** Where to POST: a fixed `http(s)` URL, or one computed per message. */
  url: string | URL | ((message: OutboxMessage) => string | URL);
  /**
   * Extra request headers, fixed or per message; they override the message's own `headers` and
   * are overridden by the ones this publisher owns (content type, idempotency key, signature).
   * Fixed ones are checked here (a `ConfigError` naming `headers.<name>`); computed ones and the
   * message's own at each publish (a bad one sends the message dead, naming the header). Values
   * of credential-like headers (authorization, cookie, *key*, *token*, *secret* …), the
   * message's own included, are scrubbed from every error text.
   */
  headers?: HeadersOption;
  /**
   * Errors name the target by origin only, not origin and path: for URLs whose path is the
   * credential (Slack-style incoming webhooks). The query string is never shown.
   * @defaultValue false
   */
  hideUrlPath?: boolean;
  /** Per request: connect, send, response headers and the bounded body read. Keep it well inside the lease. @defaultValue '10s' */
  timeout?: Duration;
  /** Standard Webhooks secrets (`whsec_…`); each signs the request (several = rotation). Unset: unsigned. */
  signingSecrets?: string | readonly string[];
  /** Header that carries the message id. @defaultValue 'Idempotency-Key' */
  idempotencyHeader?: string;
  /** How a `409 Conflict` is read. @defaultValue 'success' ("already in the target state") */
  conflict?: ConflictPolicy;
  /** Longest `Retry-After` honoured; longer ones are cut to it. @defaultValue '1h' */
  maxRetryAfter?: Duration;
  /** Overrides the classification: return a verdict, or `undefined` to use the default table. */
  classify?: (response: HttpResponseSummary, message: OutboxMessage) => HttpClassification | undefined;
  /** The JSON body for a message. @defaultValue {@link webhookEnvelope} */
  body?: (message: OutboxMessage) => unknown;
  /** Bytes of a response body read (for `classify` and error excerpts); the rest is discarded. @defaultValue 16384 */
  maxBodyBytes?: number;
  /** Characters of the response body kept in an error message (`last_error`). @defaultValue 500 */
  excerptLength?: number;
}

/** {@link HttpPublisherOptions} checked, with durations in ms. */
export interface NormalizedHttpPublisherOptions {
  readonly url: URL | ((message: OutboxMessage) => string | URL);
  readonly headers: HeadersOption | undefined;
  readonly hideUrlPath: boolean;
  readonly timeoutMs: number;
  readonly keys: readonly WebhookKey[];
  readonly idempotencyHeader: string;
  readonly conflict: ConflictPolicy;
  readonly maxRetryAfterMs: number;
  readonly classify: HttpPublisherOptions['classify'];
  readonly body: (message: OutboxMessage) => unknown;
  readonly maxBodyBytes: number;
  readonly excerptLength: number;
  /** Texts scrubbed from every error: secrets and credential-like static header values. */
  readonly scrub: readonly string[];
}

const CONFLICT_POLICIES: readonly ConflictPolicy[] = ['success', 'retryable', 'permanent'];
/** Header names whose values are credentials. */
export const SENSITIVE_HEADER = /auth|cookie|key|token|secret|session|password|signature/i;

const HTTP_PUBLISHER_OPTIONS = optionKeys<HttpPublisherOptions>()(
  'httpPublisher',
  ['url', 'headers', 'hideUrlPath', 'timeout', 'signingSecrets', 'idempotencyHeader', 'conflict', 'maxRetryAfter', 'classify', 'body', 'maxBodyBytes', 'excerptLength'],
  { secret: 'the signing secrets are `signingSecrets`', secrets: 'the signing secrets are `signingSecrets`', method: 'the publisher always POSTs' },
);

/** Checks and freezes the options; every mistake is a `ConfigError` naming the option. */
export function normalizeHttpPublisherOptions(options: HttpPublisherOptions): NormalizedHttpPublisherOptions {
  if (typeof options !== 'object' || options === null) throw new ConfigError('options', 'Expected an options object');
  checkOptionKeys(options, HTTP_PUBLISHER_OPTIONS);
  const secrets = options.signingSecrets;
  const conflict = options.conflict ?? 'success';
  if (!CONFLICT_POLICIES.includes(conflict)) {
    throw new ConfigError('conflict', `Expected \`conflict\` to be one of ${CONFLICT_POLICIES.join(', ')}, got ${String(conflict)}`);
  }
  const idempotencyHeader = options.idempotencyHeader ?? 'Idempotency-Key';
  if (typeof idempotencyHeader !== 'string' || idempotencyHeader === '' || httpHeaderFault(idempotencyHeader, '') !== undefined) {
    throw new ConfigError('idempotencyHeader', 'Expected `idempotencyHeader` to be a valid header name');
  }
  for (const [name, fn] of [['classify', options.classify], ['body', options.body]] as const) {
    if (fn !== undefined && typeof fn !== 'function') throw new ConfigError(name, `Expected \`${name}\` to be a function`);
  }
  const headers = normalizeHeaders(options.headers);
  return Object.freeze({
    url: normalizeUrl(options.url),
    headers,
    hideUrlPath: options.hideUrlPath ?? false,
    timeoutMs: parseDuration(options.timeout ?? '10s', 'timeout'),
    keys: Object.freeze(secrets === undefined ? [] : parseWebhookSecrets(secrets, 'signingSecrets')),
    idempotencyHeader,
    conflict,
    maxRetryAfterMs: parseDuration(options.maxRetryAfter ?? '1h', 'maxRetryAfter', { allowZero: true }),
    classify: options.classify,
    body: options.body ?? webhookEnvelope,
    maxBodyBytes: checkInteger(options.maxBodyBytes ?? 16_384, 'maxBodyBytes', INTEGER_RANGES.maxBodyBytes),
    excerptLength: checkInteger(options.excerptLength ?? 500, 'excerptLength', INTEGER_RANGES.excerptLength),
    scrub: Object.freeze([
      ...(secrets === undefined ? [] : secretTexts(secrets)),
      ...(typeof headers === 'object' ? sensitiveValues(headers) : []),
    ]),
  });
}

/**
 * Texts to scrub for the credential-like headers in `headers`: each value, its JSON-escaped form
 * (a receiver that echoes the request as JSON writes that), and its longer whitespace-separated
 * parts (`Bearer <token>`).
 */
export function sensitiveValues(headers: Readonly<Record<string, string>>): string[] {
  return Object.entries(headers)
    .filter(([name, value]) => SENSITIVE_HEADER.test(name) && typeof value === 'string')
    .flatMap(([, value]) => [value, JSON.stringify(value).slice(1, -1), ...value.split(/\s+/).filter((part) => part.length >= 8)]);
}

/** Parses a URL option or a computed URL; `http:` and `https:` only. The text is never echoed. */
export function parseHttpUrl(value: unknown, option: string): URL {
  let url: URL | undefined;
  try {
    url = value instanceof URL ? new URL(value.href) : typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url) throw new ConfigError(option, `Expected \`${option}\` to be an absolute http(s) URL`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(option, `Expected \`${option}\` to use http: or https:, got ${url.protocol}`);
  }
  if (url.username || url.password) {
    // fetch refuses them anyway, with the whole URL (credentials included) in its error
    throw new ConfigError(option, `Expected \`${option}\` without user info: send credentials in \`headers\``);
  }
  return url;
}

function normalizeHeaders(headers: HttpPublisherOptions['headers']): HeadersOption | undefined {
  if (headers === undefined || typeof headers === 'function') return headers;
  return checkHttpHeaders(headers, 'headers');
}

function normalizeUrl(url: HttpPublisherOptions['url']): NormalizedHttpPublisherOptions['url'] {
  return typeof url === 'function' ? url : parseHttpUrl(url, 'url');
}
