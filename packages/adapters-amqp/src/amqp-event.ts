import type { ConsumeMessage } from 'amqplib';
import { AMQP_ENVELOPE_HEADERS } from './amqp-envelope.js';

/** One event as a consumer receives it from RabbitMQ: properties and envelope headers decoded. */
export interface AmqpEvent<Payload = unknown> {
  /** The `message-id` property: the outbox id (or your `messageId`), what the inbox records. */
  readonly id: string;
  readonly aggregateType: string;
  /** The aggregate id. */
  readonly key: string;
  /** The `type` property. */
  readonly eventType: string;
  /** When the producer's transaction recorded it, if the header was there. */
  readonly occurredAt: Date | undefined;
  /** The body, parsed as JSON. */
  readonly payload: Payload;
  /** The producer's own headers (`traceparent`, …), without the envelope's. */
  readonly headers: Readonly<Record<string, string>>;
  readonly exchange: string;
  readonly routingKey: string;
  /** True when the broker delivered it before (a requeue, a consumer that went away). */
  readonly redelivered: boolean;
}

const ENVELOPE = new Set<string>(Object.values(AMQP_ENVELOPE_HEADERS));

/**
 * Decodes a delivered message, or throws why it cannot be applied (no `message-id`, a body
 * that is not JSON): retrying cannot fix either. @internal
 */
export function toAmqpEvent(m: ConsumeMessage): AmqpEvent {
  const { properties, fields } = m;
  const id = text(properties.messageId);
  if (id === undefined) throw new Error(`message ${fields.deliveryTag} from ${fields.exchange || '(default exchange)'} has no message-id`);
  let payload: unknown;
  try {
    payload = m.content.length === 0 ? null : JSON.parse(m.content.toString('utf8'));
  } catch (error) {
    throw new Error(`message ${id}: the body is not JSON`, { cause: error });
  }
  const raw = (properties.headers ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    const v = text(value);
    if (!ENVELOPE.has(name) && v !== undefined) headers[name] = v;
  }
  const occurred = text(raw[AMQP_ENVELOPE_HEADERS.occurredAt]);
  return Object.freeze({
    id,
    aggregateType: text(raw[AMQP_ENVELOPE_HEADERS.aggregateType]) ?? '',
    key: text(raw[AMQP_ENVELOPE_HEADERS.aggregateId]) ?? '',
    eventType: text(properties.type) ?? '',
    occurredAt: occurred === undefined ? undefined : new Date(occurred),
    payload,
    headers: Object.freeze(headers),
    exchange: fields.exchange,
    routingKey: fields.routingKey,
    redelivered: fields.redelivered,
  });
}

// header values arrive as strings, or as Buffers for byte arrays
function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (Buffer.isBuffer(value)) return value.length === 0 ? undefined : value.toString('utf8');
  return undefined;
}
