import { describe, expect, it } from 'vitest';
import { signWebhook } from './sign-webhook.js';
import { verifyWebhook } from './verify-webhook.js';
import { generateWebhookSecret } from './webhook-secret.js';

// The example of the Standard Webhooks specification's test vectors (also in its reference libraries).
const SPEC_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SPEC_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const SPEC_TIMESTAMP = 1614265330;
const SPEC_BODY = '{"test": 2432232314}';
const SPEC_SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

describe('signWebhook', () => {
  it('reproduces the specification example', () => {
    const headers = signWebhook({ id: SPEC_ID, timestamp: SPEC_TIMESTAMP, body: SPEC_BODY }, SPEC_SECRET);
    expect(headers).toEqual({
      'webhook-id': SPEC_ID,
      'webhook-timestamp': String(SPEC_TIMESTAMP),
      'webhook-signature': SPEC_SIGNATURE,
    });
  });

  it('signs with every secret, space-separated, for rotation; either one verifies', () => {
    const [a, b] = [generateWebhookSecret(), generateWebhookSecret()];
    const body = '{"n":1}';
    const headers = signWebhook({ id: 'm1', body }, [a, b]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(verifyWebhook(headers, body, a).id).toBe('m1');
    expect(verifyWebhook(headers, body, [generateWebhookSecret(), b]).id).toBe('m1');
  });

  it('signs bytes and strings alike', () => {
    const secret = generateWebhookSecret();
    const body = '{"name":"Zoë"}';
    const fromString = signWebhook({ id: 'm', timestamp: 1, body }, secret);
    const fromBytes = signWebhook({ id: 'm', timestamp: 1, body: Buffer.from(body) }, secret);
    expect(fromBytes).toEqual(fromString);
  });
});
