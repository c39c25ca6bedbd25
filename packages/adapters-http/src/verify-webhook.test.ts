import { afterEach, describe, expect, it, vi } from 'vitest';
import { signWebhook } from './sign-webhook.js';
import { verifyWebhook } from './verify-webhook.js';
import { WebhookVerificationError, type WebhookVerificationReason } from './webhook-verification-error.js';
import { generateWebhookSecret } from './webhook-secret.js';

const secret = generateWebhookSecret();
const body = '{"id":"m1","data":{"amount":5}}';
const now = () => Math.floor(Date.now() / 1000);

function reasonOf(fn: () => unknown): WebhookVerificationReason | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
  return undefined;
}

describe('verifyWebhook', () => {
  it('accepts node-style, fetch-style and mixed-case headers', () => {
    const headers = signWebhook({ id: 'm1', body }, secret);
    expect(verifyWebhook({ ...headers }, body, secret)).toEqual({ id: 'm1', timestamp: Number(headers['webhook-timestamp']) });
    expect(verifyWebhook(new Headers({ ...headers }), Buffer.from(body), [secret]).id).toBe('m1');
    const mixed = { 'Webhook-Id': headers['webhook-id'], 'WEBHOOK-TIMESTAMP': headers['webhook-timestamp'], 'webhook-signature': [headers['webhook-signature']] };
    expect(verifyWebhook(mixed, body, secret).id).toBe('m1');
  });

  it('names what is missing', () => {
    const headers = signWebhook({ id: 'm1', body }, secret);
    expect(reasonOf(() => verifyWebhook({ ...headers, 'webhook-signature': '' }, body, secret))).toBe('MISSING_HEADER');
    expect(() => verifyWebhook({}, body, secret)).toThrow(/webhook-id, webhook-timestamp, webhook-signature/);
  });

  it('rejects timestamps outside the tolerance, either way, and malformed ones', () => {
    const old = signWebhook({ id: 'm1', body, timestamp: now() - 301 }, secret);
    const future = signWebhook({ id: 'm1', body, timestamp: now() + 301 }, secret);
    expect(reasonOf(() => verifyWebhook(old, body, secret))).toBe('TIMESTAMP_TOO_OLD');
    expect(reasonOf(() => verifyWebhook(future, body, secret))).toBe('TIMESTAMP_TOO_NEW');
    expect(verifyWebhook(old, body, secret, { tolerance: '10m' }).id).toBe('m1');
    const fresh = signWebhook({ id: 'm1', body }, secret);
    for (const timestamp of ['1.5e9', '-1', 'soon', `${now()}.0`]) {
      expect(reasonOf(() => verifyWebhook({ ...fresh, 'webhook-timestamp': timestamp }, body, secret))).toBe('INVALID_TIMESTAMP');
    }
  });

  it('rejects a tampered body, id or timestamp, a wrong secret, and signatures of other versions', () => {
    const headers = signWebhook({ id: 'm1', body }, secret);
    const t = Number(headers['webhook-timestamp']);
    expect(reasonOf(() => verifyWebhook(headers, body.replace('5', '6'), secret))).toBe('SIGNATURE_MISMATCH');
    expect(reasonOf(() => verifyWebhook({ ...headers, 'webhook-id': 'm2' }, body, secret))).toBe('SIGNATURE_MISMATCH');
    expect(reasonOf(() => verifyWebhook({ ...headers, 'webhook-timestamp': String(t - 1) }, body, secret))).toBe('SIGNATURE_MISMATCH');
    expect(reasonOf(() => verifyWebhook(headers, body, generateWebhookSecret()))).toBe('SIGNATURE_MISMATCH');
    const v2 = headers['webhook-signature'].replace('v1,', 'v2,');
    expect(reasonOf(() => verifyWebhook({ ...headers, 'webhook-signature': v2 }, body, secret))).toBe('SIGNATURE_MISMATCH');
    const truncated = headers['webhook-signature'].slice(0, -4);
    expect(reasonOf(() => verifyWebhook({ ...headers, 'webhook-signature': truncated }, body, secret))).toBe('SIGNATURE_MISMATCH');
  });

  it('finds the matching signature among several, skipping garbage', () => {
    const headers = signWebhook({ id: 'm1', body }, secret);
    const signature = `v1a,xyz v1 v1,!!! ${headers['webhook-signature']}`;
    expect(verifyWebhook({ ...headers, 'webhook-signature': signature }, body, secret).id).toBe('m1');
  });

  it('refuses a parsed body, which cannot be verified', () => {
    const headers = signWebhook({ id: 'm1', body }, secret);
    expect(() => verifyWebhook(headers, JSON.parse(body) as string, secret)).toThrow(/rawBody/);
  });
});

// The Standard Webhooks reference implementation (standard-webhooks/standard-webhooks,
// libraries/javascript/src/index.ts and webhook.test.ts): its published test vector, and the
// two places where a lenient verifier would disagree with it.
describe('verifyWebhook against the Standard Webhooks reference', () => {
  const vector = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const headers = {
    'webhook-id': vector.id,
    'webhook-timestamp': String(vector.timestamp),
    'webhook-signature': vector.signature,
  };
  /** The receiver's clock at `offsetSeconds` from the vector's timestamp, half-way into that second. */
  const clockAt = (offsetSeconds: number) => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime((vector.timestamp + offsetSeconds) * 1000 + 500);
  };
  afterEach(() => void vi.useRealTimers());

  it('signs the vector as the reference does', () => {
    expect(signWebhook({ id: vector.id, body: vector.body, timestamp: vector.timestamp }, vector.secret)['webhook-signature']).toBe(vector.signature);
  });

  it('accepts a timestamp exactly at the tolerance, either way, and refuses one second past it', () => {
    // reference verifyTimestamp: too old when `now - timestamp > tolerance`, too new when `timestamp > now + tolerance`
    clockAt(300);
    expect(verifyWebhook(headers, vector.body, vector.secret)).toEqual({ id: vector.id, timestamp: vector.timestamp });
    clockAt(301);
    expect(reasonOf(() => verifyWebhook(headers, vector.body, vector.secret))).toBe('TIMESTAMP_TOO_OLD');
    clockAt(-300);
    expect(verifyWebhook(headers, vector.body, vector.secret).id).toBe(vector.id);
    clockAt(-301);
    expect(reasonOf(() => verifyWebhook(headers, vector.body, vector.secret))).toBe('TIMESTAMP_TOO_NEW');
    clockAt(60);
    expect(verifyWebhook(headers, vector.body, vector.secret, { tolerance: '1m' }).id).toBe(vector.id);
    clockAt(61);
    expect(reasonOf(() => verifyWebhook(headers, vector.body, vector.secret, { tolerance: '1m' }))).toBe('TIMESTAMP_TOO_OLD');
  });

  it('refuses signatures the reference refuses: unpadded, URL-safe, partial, empty, garbage', () => {
    clockAt(0);
    const base64 = vector.signature.slice('v1,'.length);
    const variants = [
      `v1,${base64.replace(/=+$/, '')}`, // unpadded: decodes to the same bytes, but is not the text the reference compares
      `v1,${base64.replaceAll('+', '-').replaceAll('/', '_')}`,
      vector.signature.slice(0, 8),
      'v1,',
      'v1,dawfeoifkpqwoekfpqoekf',
    ];
    for (const signature of variants) {
      expect(reasonOf(() => verifyWebhook({ ...headers, 'webhook-signature': signature }, vector.body, vector.secret)), signature).toBe('SIGNATURE_MISMATCH');
    }
  });

  it('accepts the reference\'s multi-signature header', () => {
    clockAt(0);
    const other = 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
    const signature = [other, other.replace('v1,', 'v2,'), vector.signature, other].join(' ');
    expect(verifyWebhook({ ...headers, 'webhook-signature': signature }, vector.body, vector.secret).id).toBe(vector.id);
    expect(verifyWebhook(headers, vector.body, vector.secret.slice('whsec_'.length)).id).toBe(vector.id);
  });
});
