import { describe, expect, it } from 'vitest';
import type { OutboxMessage } from '@leasehold/outbox';
import { amqpProperties } from './amqp-envelope.js';
import { toAmqpEvent } from './amqp-event.js';

const message = (headers: Record<string, string> = {}): OutboxMessage => ({
  id: '42', key: 'o-1', aggregateType: 'order', eventType: 'OrderPaid', payload: { total: 5 }, headers, attempts: 1,
  createdAt: new Date('2026-01-01T00:00:01.500Z'),
});

describe('AMQP envelope', () => {
  it('maps a message to persistent, mandatory properties with message-id and the trace context', () => {
    expect(amqpProperties(message({ traceparent: '00-abc-def-01' }), '42', { mandatory: true, appId: 'shop' })).toEqual({
      messageId: '42', type: 'OrderPaid', timestamp: 1767225601, contentType: 'application/json', persistent: true, mandatory: true, appId: 'shop',
      headers: {
        traceparent: '00-abc-def-01',
        'leasehold-aggregate-type': 'order',
        'leasehold-aggregate-id': 'o-1',
        'leasehold-occurred-at': '2026-01-01T00:00:01.500Z',
      },
    });
  });

  it.each(['leasehold-aggregate-id', 'x-delay', 'X-Match'])('refuses the reserved header %s', (name) => {
    expect(() => amqpProperties(message({ [name]: '1' }), '42', { mandatory: true, appId: undefined })).toThrow(/reserved/);
  });

  it('decodes what it encoded', () => {
    const p = amqpProperties(message({ traceparent: 't' }), '42', { mandatory: true, appId: undefined });
    const event = toAmqpEvent({
      content: Buffer.from(JSON.stringify({ total: 5 })),
      fields: { deliveryTag: 1, redelivered: false, exchange: 'events', routingKey: 'order.OrderPaid', consumerTag: 'c' },
      properties: { messageId: p.messageId, type: p.type, headers: p.headers },
    } as never);
    expect(event).toMatchObject({
      id: '42', aggregateType: 'order', key: 'o-1', eventType: 'OrderPaid', payload: { total: 5 }, headers: { traceparent: 't' },
      routingKey: 'order.OrderPaid', redelivered: false,
    });
    expect(event.occurredAt?.toISOString()).toBe('2026-01-01T00:00:01.500Z');
  });

  it('a delivery without message-id or with a body that is not JSON cannot be applied', () => {
    const base = { fields: { deliveryTag: 9, redelivered: false, exchange: '', routingKey: 'q', consumerTag: 'c' } };
    expect(() => toAmqpEvent({ ...base, content: Buffer.from('{}'), properties: { headers: {} } } as never)).toThrow(/has no message-id/);
    expect(() => toAmqpEvent({ ...base, content: Buffer.from('{'), properties: { messageId: '1', headers: {} } } as never)).toThrow(/not JSON/);
  });
});
