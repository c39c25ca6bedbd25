import { PermanentError } from '@leasehold/core';
import type { OutboxMessage } from '@leasehold/outbox';

/**
 * The default routing key of a message: `<aggregateType>.<eventType>`, e.g. `order.OrderPaid`,
 * so a topic exchange binding `order.#` routes every event of orders to one queue.
 *
 * @example
 * defaultRoutingKey(message); // 'order.OrderPaid'
 */
export function defaultRoutingKey(message: OutboxMessage): string {
  return `${message.aggregateType}.${message.eventType}`;
}

/** The routing key for `message`, checked (a short string of at most 255 bytes). @internal */
export function checkedRoutingKey(key: unknown, message: OutboxMessage): string {
  if (typeof key !== 'string') throw new PermanentError(`message ${message.id}: routingKey(message) returned ${typeof key}, not a string`);
  if (Buffer.byteLength(key) > 255) throw new PermanentError(`message ${message.id}: routing key longer than 255 bytes`);
  return key;
}
