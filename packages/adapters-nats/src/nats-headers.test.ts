import { describe, expect, it } from 'vitest';
import type { OutboxMessage } from '@leasehold/outbox';
import { envelopeHeaders, natsHeaderFault } from './nats-headers.js';

const message = (headers: Record<string, string> = {}): OutboxMessage => ({
  id: '42', key: 'o-1', aggregateType: 'order', eventType: 'OrderPaid', payload: {}, headers, attempts: 1,
  createdAt: new Date('2026-01-01T00:00:00.000Z'),
});

describe('envelope headers', () => {
  it('carry the envelope, then the producer headers (the trace context) unchanged', () => {
    expect(envelopeHeaders(message({ traceparent: '00-abc-def-01' }))).toEqual([
      ['Leasehold-Aggregate-Type', 'order'],
      ['Leasehold-Aggregate-Id', 'o-1'],
      ['Leasehold-Event-Type', 'OrderPaid'],
      ['Leasehold-Occurred-At', '2026-01-01T00:00:00.000Z'],
      ['Content-Type', 'application/json'],
      ['traceparent', '00-abc-def-01'],
    ]);
  });

  it.each([
    ['Nats-Rollup', 'sub', /reserved: Nats-\*/],
    ['nats-expected-stream', 'X', /reserved: Nats-\*/],
    ['Leasehold-Aggregate-Id', 'x', /reserved for the envelope/],
    ['content-type', 'text/plain', /reserved for the envelope/],
    ['x-tenant', 'a\r\nInjected: 1', /line break/],
    ['bad name', 'v', /not a valid header name/],
    ['a:b', 'v', /not a valid header name/],
  ])('refuses %s', (name, value, fault) => {
    expect(natsHeaderFault(name, value)).toMatch(fault);
    expect(() => envelopeHeaders(message({ [name]: value }))).toThrow(/^message 42: header/);
  });

  it('names the header, never its value', () => {
    expect(() => envelopeHeaders(message({ 'x-secret': 'hunter2\n' }))).toThrow(expect.objectContaining({ message: expect.not.stringContaining('hunter2') }));
  });
});
