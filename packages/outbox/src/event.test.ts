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

  it('applies core\'s text, key and JSON rules to every field, naming it', () => {
    const option = (event: unknown) => {
      try {
        checkEvent(event, 'events[3]');
      } catch (error) {
        return (error as { option?: string }).option;
      }
      return 'accepted';
    };
    expect(option({ ...base, aggregateId: 'a\ud800' })).toBe('events[3].aggregateId');
    expect(option({ ...base, aggregateId: '€'.repeat(342) })).toBe('events[3].aggregateId'); // 1,026 bytes
    expect(option({ ...base, eventType: '\udc00Paid' })).toBe('events[3].eventType');
    expect(option({ ...base, aggregateType: 'order\ud800' })).toBe('events[3].aggregateType');
    expect(option({ ...base, payload: { s: '\ud800' } })).toBe('events[3].payload');
    expect(option({ ...base, headers: { 'x-tenant-token': 'a\u0000b' } })).toBe('events[3].headers.x-tenant-token');
    expect(option({ ...base, headers: { 'x-tenant-token': '\ud800' } })).toBe('events[3].headers.x-tenant-token');
    expect(option({ ...base, maxAttempts: 1_000_001 })).toBe('events[3].maxAttempts');
    // the text \u0000 is not a NUL
    expect(checkEvent({ ...base, payload: { s: '\\u0000' } }).payloadJson).toBe('{"s":"\\\\u0000"}');
  });
});
