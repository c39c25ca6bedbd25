import type { OutboxMessage } from '@leasehold/outbox';

/** The JSON body {@link httpPublisher} sends by default. */
export interface WebhookEnvelope {
  /** The message id, also sent as `Idempotency-Key` and `webhook-id`. */
  readonly id: string;
  /** The event type, e.g. `order.placed`. */
  readonly type: string;
  /** The aggregate id the event belongs to. */
  readonly key: string;
  /** When the event was recorded (outbox insert), ISO 8601. */
  readonly occurredAt: string;
  /** The event's payload as stored. */
  readonly data: unknown;
}

/**
 * Wraps a message in the default body: `{ id, type, key, occurredAt, data }`.
 *
 * @example
 * webhookEnvelope(message); // { id: '42', type: 'order.placed', key: 'order-7', occurredAt: '…', data: {…} }
 */
export function webhookEnvelope(message: OutboxMessage): WebhookEnvelope {
  return {
    id: message.id,
    type: message.eventType,
    key: message.key,
    occurredAt: message.createdAt.toISOString(),
    data: message.payload,
  };
}
