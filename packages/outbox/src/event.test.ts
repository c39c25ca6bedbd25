import { describe, expect, it } from 'vitest';
import { checkEvent } from './event.js';

const base = { aggregateType: 'order', aggregateId: 'o-1', eventType: 'OrderPaid', payload: { a: 1 } };

describe('checkEvent', () => {
  it('normalises ids to text and payload / headers to JSON', () => {
    expect(checkEvent({ ...base, aggregateId: 42n, headers: { trace: 'x' } })).toEqual({
      aggregateType: 'order', aggregateId: '42', eventType: 'OrderPaid', payloadJson: '{"a":1}', headersJson: '{"trace":"x"}', maxAttempts: null,
    });
    expect(checkEvent({ ...base, aggregateId: 7, maxAttempts: 3 })).toMatchObject({ aggregateId: '7', maxAttempts: 3, headersJson: '{}' });
  });

  it('names the field at fault, with the caller-supplied path', () => {
    const option = (event: unknown, at?: string) => {
      try {
        checkEvent(event, at);
      } catch (error) {
        return (error as { option?: string }).option;
      }
      return 'accepted';
    };
    expect(option(null)).toBe('event');
    expect(option({ ...base, aggregateId: 1.5 })).toBe('event.aggregateId');
    expect(option({ ...base, aggregateId: 2 ** 60 })).toBe('event.aggregateId'); // not a safe integer
    expect(option({ ...base, eventType: 'x'.repeat(201) })).toBe('event.eventType');
    expect(option({ ...base, aggregateType: 'o\u0000' })).toBe('event.aggregateType');
    expect(option({ ...base, payload: () => 1 })).toBe('event.payload');
    expect(option({ ...base, headers: ['a'] }, 'events[3]')).toBe('events[3].headers');
    expect(option({ ...base, maxAttempts: 1.5 })).toBe('event.maxAttempts');
    expect(option({ ...base, payload: null })).toBe('accepted');
  });
});
