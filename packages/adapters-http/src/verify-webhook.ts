import { timingSafeEqual } from 'node:crypto';
import { ConfigError, type Duration } from '@leasehold/core';
import { checkOptionKeys, optionKeys, parseDuration } from '@leasehold/core/internal';
import { signedContent } from './sign-webhook.js';
import { WebhookVerificationError } from './webhook-verification-error.js';
import { toWebhookKeys, type WebhookKey } from './webhook-secret.js';

/** Request headers as fetch (`Headers`) or `node:http` (`req.headers`) give them. */
export type IncomingHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /**
   * How far `webhook-timestamp` may be from the receiver's clock, either way, in whole seconds of
   * the receiver's clock; exactly `tolerance` away is still accepted, as in the Standard Webhooks
   * reference implementation. Bounds how long a captured delivery can be replayed; the inbox
   * catches replays inside it.
   * @defaultValue '5m'
   */
  tolerance?: Duration;
}

/** A delivery that passed {@link verifyWebhook}. */
export interface VerifiedWebhook {
  /** `webhook-id`: the sender's stable message id, to hand to the inbox. */
  readonly id: string;
  /** `webhook-timestamp`, unix seconds. */
  readonly timestamp: number;
}

const TIMESTAMP = /^\d{1,15}$/;
const SHA256_BYTES = 32;

const VERIFY_OPTIONS = optionKeys<VerifyWebhookOptions>()('verifyWebhook', ['tolerance'], { secrets: 'the secrets are verifyWebhook\'s third argument' });

/**
 * Verifies a Standard Webhooks delivery: the headers are present, the timestamp is within
 * `tolerance` of now, and some `v1` signature, in canonical (padded) base64, equals the HMAC of
 * `${id}.${timestamp}.${rawBody}` under some secret (constant-time compare). Throws
 * {@link WebhookVerificationError} with a reason code otherwise. `rawBody` must be the bytes
 * received, before any JSON parsing.
 *
 * @example
 * const { id } = verifyWebhook(req.headers, rawBody, [currentSecret, previousSecret]);
 * await withTransaction(pool, (trx) => inbox.receive(trx, id, (trx) => applyEvent(trx, JSON.parse(rawBody))));
 */
export function verifyWebhook(
  headers: IncomingHeaders,
  rawBody: string | Uint8Array,
  secrets: string | readonly string[] | readonly WebhookKey[],
  options: VerifyWebhookOptions = {},
): VerifiedWebhook {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new ConfigError('rawBody', 'Expected `rawBody` to be the body as received (string or Buffer), not parsed JSON');
  }
  checkOptionKeys(options, VERIFY_OPTIONS);
  const toleranceMs = parseDuration(options.tolerance ?? '5m', 'tolerance');
  const keys = toWebhookKeys(secrets);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature) {
    const missing = [!id && 'webhook-id', !timestamp && 'webhook-timestamp', !signature && 'webhook-signature'];
    throw new WebhookVerificationError('MISSING_HEADER', `missing ${missing.filter(Boolean).join(', ')}`, id);
  }
  const seconds = checkTimestamp(timestamp, toleranceMs, id);
  const content = signedContent(id, timestamp, rawBody);
  const expected = keys.map((key) => key.hmac(content));
  for (const received of signatures(signature)) {
    // every candidate is 32 bytes (checked in signatures()), so timingSafeEqual cannot throw
    if (expected.some((mac) => timingSafeEqual(mac, received))) return { id, timestamp: seconds };
  }
  throw new WebhookVerificationError('SIGNATURE_MISMATCH', `no v1 signature matches for message ${id}`, id);
}

// Aligned with the Standard Webhooks reference implementation (standard-webhooks/standard-webhooks,
// libraries/javascript/src/index.ts at 009bcc00, `verifyTimestamp`): it compares whole seconds,
// `now = Math.floor(Date.now() / 1000)`, and refuses only when `now - timestamp > tolerance` or
// `timestamp > now + tolerance`, so a timestamp exactly at the tolerance, either way, is accepted.
function checkTimestamp(text: string, toleranceMs: number, id: string): number {
  if (!TIMESTAMP.test(text)) {
    throw new WebhookVerificationError('INVALID_TIMESTAMP', `webhook-timestamp is not unix seconds (message ${id})`, id);
  }
  const seconds = Number(text);
  const now = Math.floor(Date.now() / 1000);
  const tolerance = toleranceMs / 1000;
  if (now - seconds > tolerance) {
    throw new WebhookVerificationError('TIMESTAMP_TOO_OLD', `message ${id} was signed ${now - seconds} s ago`, id);
  }
  if (seconds - now > tolerance) {
    throw new WebhookVerificationError('TIMESTAMP_TOO_NEW', `message ${id} is signed ${seconds - now} s in the future`, id);
  }
  return seconds;
}

// `v1,<base64> v1,<base64> v1a,<…>`: other versions (e.g. asymmetric v1a) and malformed entries
// are skipped. The reference implementation (same file, `verify`) compares the received text
// with the padded base64 it computes, so only canonical base64 can match there: an unpadded or
// otherwise re-encoded signature is refused here too, rather than decoded leniently by Buffer.
function signatures(headerValue: string): Buffer[] {
  const out: Buffer[] = [];
  for (const entry of headerValue.split(/\s+/)) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const text = entry.slice(comma + 1);
    const bytes = Buffer.from(text, 'base64');
    if (bytes.length === SHA256_BYTES && bytes.toString('base64') === text) out.push(bytes);
  }
  return out;
}

function header(headers: IncomingHeaders, name: string): string | undefined {
  let value: string | readonly string[] | null | undefined;
  if (typeof (headers as Headers).get === 'function') value = (headers as Headers).get(name);
  else {
    const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
    value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  }
  const text = Array.isArray(value) ? value.join(' ') : (value as string | null | undefined);
  return text?.trim() || undefined;
}
