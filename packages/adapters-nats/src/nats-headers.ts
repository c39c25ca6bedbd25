import { PermanentError } from '@leasehold/core';
import type { OutboxMessage } from '@leasehold/outbox';

/**
 * The headers that carry a message's envelope, beside `Nats-Msg-Id` (the message id). The
 * body is the payload alone, as JSON; the producer's own headers (`traceparent`, `tracestate`,
 * `baggage`, …) travel unchanged next to these.
 */
export const NATS_ENVELOPE_HEADERS = Object.freeze({
  aggregateType: 'Leasehold-Aggregate-Type',
  aggregateId: 'Leasehold-Aggregate-Id',
  eventType: 'Leasehold-Event-Type',
  occurredAt: 'Leasehold-Occurred-At',
  contentType: 'Content-Type',
} as const);

/** The header JetStream deduplicates on. */
export const NATS_MSG_ID_HEADER = 'Nats-Msg-Id';

const ENVELOPE_NAMES = new Set(Object.values(NATS_ENVELOPE_HEADERS).map((n) => n.toLowerCase()));

/**
 * Why a producer header cannot be sent, or undefined. `Nats-*` headers steer the server
 * (`Nats-Rollup` purges a subject, `Nats-Expected-*` changes what is accepted, `Nats-TTL`
 * expires the message), so an event may not carry them; `Leasehold-*` and `Content-Type` are
 * the envelope's. @internal
 */
export function natsHeaderFault(name: string, value: unknown): string | undefined {
  if (!/^[!#-9;-~]+$/.test(name)) return 'is not a valid header name';
  const lower = name.toLowerCase();
  if (lower.startsWith('nats-')) return 'is reserved: Nats-* headers steer the server';
  if (lower.startsWith('leasehold-') || ENVELOPE_NAMES.has(lower)) return 'is reserved for the envelope';
  if (typeof value !== 'string') return 'has a value that is not a string';
  if (/[\r\n\0]/.test(value)) return 'has a line break or NUL in its value';
  return undefined;
}

/**
 * The headers of `message` as sent: the envelope, then the producer's own headers. A header
 * that cannot be sent is a `PermanentError` naming it (never its value). @internal
 */
export function envelopeHeaders(message: OutboxMessage): Array<readonly [string, string]> {
  const own = Object.entries(message.headers ?? {}).map(([name, value]): readonly [string, string] => {
    const fault = natsHeaderFault(name, value);
    if (fault) throw new PermanentError(`message ${message.id}: header \`${name.slice(0, 80)}\` ${fault}`);
    return [name, value];
  });
  return [
    [NATS_ENVELOPE_HEADERS.aggregateType, message.aggregateType],
    [NATS_ENVELOPE_HEADERS.aggregateId, message.key],
    [NATS_ENVELOPE_HEADERS.eventType, message.eventType],
    [NATS_ENVELOPE_HEADERS.occurredAt, message.createdAt.toISOString()],
    [NATS_ENVELOPE_HEADERS.contentType, 'application/json'],
    ...own,
  ];
}

/** The body of `message`: its payload as JSON (or what `body(message)` returns). @internal */
export function encodeBody(value: unknown, message: OutboxMessage): Uint8Array {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new PermanentError(`message ${message.id} cannot be serialised as JSON`, { cause: error });
  }
  return new TextEncoder().encode(text ?? 'null');
}
