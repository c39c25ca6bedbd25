import type { Claimed } from '@leasehold/core';
import type { OutboxRow } from './outbox-table.js';
import type { OutboxMessage } from './publisher.js';

/**
 * The message a publisher receives for a claimed outbox row. Use it when you drive the outbox
 * with core's primitives (`dispatchOnce(pool, (row) => publisher.publish(toOutboxMessage(row), …),
 * { table: outboxTable() })`) instead of the dispatcher.
 */
export function toOutboxMessage(row: Claimed<OutboxRow>): OutboxMessage {
  return Object.freeze({
    id: row.id,
    key: row.aggregateId,
    aggregateType: row.aggregateType,
    eventType: row.eventType,
    payload: row.payload,
    headers: row.headers,
    attempts: row.attempts,
    createdAt: row.createdAt,
  });
}
