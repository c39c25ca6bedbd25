import { PermanentError } from '@leasehold/core';
import type { OutboxMessage } from '@leasehold/outbox';

/**
 * The headers that carry a message's envelope besides the AMQP properties (`message-id` = the
 * outbox id, `type` = the event type, `timestamp`, `content-type: application/json`,
 * `delivery-mode: 2`). The body is the payload alone, as JSON; the producer's own headers
 * (`traceparent`, `tracestate`, `baggage`, …) travel unchanged next to these.
 */
export const AMQP_ENVELOPE_HEADERS = Object.freeze({
  aggregateType: 'leasehold-aggregate-type',
  aggregateId: 'leasehold-aggregate-id',
  occurredAt: 'leasehold-occurred-at',
} as const);

/** What {@link amqpProperties} builds: the publish options amqplib takes, minus routing. @internal */
export interface AmqpMessageProperties {
  readonly messageId: string;
  readonly type: string;
  readonly timestamp: number;
  readonly contentType: 'application/json';
  readonly persistent: true;
  readonly mandatory: boolean;
  readonly appId: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The AMQP properties and headers of `message`. Producer headers named `leasehold-*` or
 * `x-*` (RabbitMQ reads some of those: `x-delay`, `x-match`, …) are refused with a
 * `PermanentError` naming the header. @internal
 */
export function amqpProperties(
  message: OutboxMessage,
  messageId: string,
  options: { readonly mandatory: boolean; readonly appId: string | undefined },
): AmqpMessageProperties {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const lower = name.toLowerCase();
    if (lower.startsWith('leasehold-') || lower.startsWith('x-')) {
      throw new PermanentError(`message ${message.id}: header \`${name.slice(0, 80)}\` is reserved (leasehold-* is the envelope's, x-* RabbitMQ's)`);
    }
    if (typeof value !== 'string') throw new PermanentError(`message ${message.id}: header \`${name.slice(0, 80)}\` is not a string`);
    headers[name] = value;
  }
  headers[AMQP_ENVELOPE_HEADERS.aggregateType] = message.aggregateType;
  headers[AMQP_ENVELOPE_HEADERS.aggregateId] = message.key;
  headers[AMQP_ENVELOPE_HEADERS.occurredAt] = message.createdAt.toISOString();
  return {
    messageId,
    type: message.eventType,
    timestamp: Math.floor(message.createdAt.getTime() / 1000),
    contentType: 'application/json',
    persistent: true,
    mandatory: options.mandatory,
    appId: options.appId,
    headers,
  };
}

/** The body of `message`: its payload as JSON (or what `body(message)` returns). @internal */
export function encodeBody(value: unknown, message: OutboxMessage): Buffer {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new PermanentError(`message ${message.id} cannot be serialised as JSON`, { cause: error });
  }
  return Buffer.from(text ?? 'null', 'utf8');
}
