import { describe, expect, it } from 'vitest';
import { classifyAmqpFailure, type AmqpFailure } from './classify-amqp-failure.js';

describe('classifyAmqpFailure', () => {
  it.each<[AmqpFailure, 'retryable' | 'permanent', RegExp]>([
    [{ kind: 'returned', replyCode: 312, replyText: 'NO_ROUTE', exchange: 'events', routingKey: 'order.paid' }, 'permanent', /unroutable: 312 NO_ROUTE \(exchange "events", routing key "order.paid"\)/],
    [{ kind: 'nacked' }, 'retryable', /nacked/],
    [{ kind: 'timeout', ms: 4000 }, 'retryable', /no confirm within 4000 ms/],
    [{ kind: 'channel-closed', detail: "404 NOT_FOUND - no exchange 'x'" }, 'retryable', /channel closed before the confirm: 404/],
    [{ kind: 'unavailable', detail: 'connect ECONNREFUSED' }, 'retryable', /broker unavailable: connect ECONNREFUSED/],
    [{ kind: 'closed' }, 'retryable', /publisher is closed/],
  ])('%o → %s', (failure, kind, reason) => {
    const verdict = classifyAmqpFailure(failure);
    expect(verdict.kind).toBe(kind);
    expect(verdict.reason).toMatch(reason);
  });
});
