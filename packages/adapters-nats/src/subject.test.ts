import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import type { OutboxMessage } from '@leasehold/outbox';
import { checkedSubject, defaultSubject, subjectFault } from './subject.js';

const message = { id: '7', key: 'o-1', aggregateType: 'order', eventType: 'OrderPaid', payload: {}, headers: {}, attempts: 1, createdAt: new Date() } as OutboxMessage;

describe('subjects', () => {
  it('defaults to <aggregateType>.<eventType>', () => {
    expect(defaultSubject(message)).toBe('order.OrderPaid');
  });

  it.each([
    ['', 'is empty'],
    ['a..b', 'has an empty token'],
    ['.a', 'has an empty token'],
    ['a.*', 'has a wildcard token'],
    ['a.>', 'has a wildcard token'],
    ['a b', 'contains whitespace or a control character'],
    ['a\u0000b', 'contains whitespace or a control character'],
    ['x'.repeat(256), 'is longer than 255 bytes'],
  ])('refuses %j: %s', (subject, fault) => {
    expect(subjectFault(subject)).toBe(fault);
  });

  it('accepts tokens with * or > inside them, which are not wildcards', () => {
    expect(subjectFault('a.b*c.d>e')).toBeUndefined();
  });

  it('a bad subject is a PermanentError naming the message', () => {
    let thrown: unknown;
    try {
      checkedSubject('a..b', message);
    } catch (error) {
      thrown = error;
    }
    expect(isLeaseholdError(thrown, 'PERMANENT')).toBe(true);
    expect((thrown as Error).message).toBe('message 7: subject "a..b" has an empty token');
  });
});
