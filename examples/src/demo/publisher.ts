import { httpPublisher } from '@leasehold/adapters-http';
import type { Publisher } from '@leasehold/outbox';
import { PUBLISH_TIMEOUT } from './settings.js';

/**
 * How every demo worker delivers: a signed POST per event (Standard Webhooks headers, the
 * outbox id as `Idempotency-Key` and `webhook-id`), classified by status code: 2xx done,
 * 503 + `Retry-After` retried later, 4xx dead. `x-demo-worker` lets the receiver say who
 * delivered what.
 */
export function demoPublisher(receiverUrl: string, secret: string, worker: string): Publisher {
  return httpPublisher({
    url: receiverUrl,
    signingSecrets: [secret],
    headers: { 'x-demo-worker': worker },
    timeout: PUBLISH_TIMEOUT,
  });
}
