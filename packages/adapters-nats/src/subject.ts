import { PermanentError } from '@leasehold/core';
import type { OutboxMessage } from '@leasehold/outbox';

/**
 * The default subject of a message: `<aggregateType>.<eventType>`, e.g. `order.OrderPaid`, so
 * a stream capturing `order.>` holds every event of orders.
 *
 * @example
 * defaultSubject(message); // 'order.OrderPaid'
 */
export function defaultSubject(message: OutboxMessage): string {
  return `${message.aggregateType}.${message.eventType}`;
}

/**
 * A subject a message can be published to, or why not: not empty, at most 255 bytes here, no
 * whitespace or control character, no empty token (`a..b`, a leading or trailing dot) and no
 * wildcard token (`*`, `>`), which the server would store literally. @internal
 */
export function subjectFault(subject: unknown): string | undefined {
  if (typeof subject !== 'string') return `is not a string (${typeof subject})`;
  if (subject === '') return 'is empty';
  if (Buffer.byteLength(subject) > 255) return 'is longer than 255 bytes';
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(subject)) return 'contains whitespace or a control character';
  const tokens = subject.split('.');
  if (tokens.some((t) => t === '')) return 'has an empty token';
  if (tokens.some((t) => t === '*' || t === '>')) return 'has a wildcard token';
  return undefined;
}

/** The subject for `message`, checked; a bad one is a `PermanentError` (retrying cannot fix it). @internal */
export function checkedSubject(subject: unknown, message: OutboxMessage): string {
  const fault = subjectFault(subject);
  if (fault) {
    const shown = typeof subject === 'string' ? ` ${JSON.stringify(subject.slice(0, 80))}` : '';
    throw new PermanentError(`message ${message.id}: subject${shown} ${fault}`);
  }
  return subject as string;
}
