import type { MsgHdrs } from '@nats-io/transport-node';
import { NATS_ENVELOPE_HEADERS, NATS_MSG_ID_HEADER } from './nats-headers.js';

/** One event as a consumer receives it from JetStream: the envelope headers decoded. */
export interface JetStreamEvent<Payload = unknown> {
  /** `Nats-Msg-Id`: the outbox id (or your `messageId`), what the inbox records. */
  readonly id: string;
  readonly aggregateType: string;
  /** The aggregate id. */
  readonly key: string;
  readonly eventType: string;
  /** When the producer's transaction recorded it, if the header was there. */
  readonly occurredAt: Date | undefined;
  /** The body, parsed as JSON. */
  readonly payload: Payload;
  /** The producer's own headers (`traceparent`, …), without the envelope's. */
  readonly headers: Readonly<Record<string, string>>;
  readonly subject: string;
  /** Position in the stream: per subject, the order the stream stored them in. */
  readonly streamSequence: number;
  /** 1 on first delivery; more after a nak, an ack timeout or a consumer restart. */
  readonly deliveryCount: number;
}

/** The parts of a JetStream message {@link toReceivedEvent} reads. @internal */
export interface ReceivedMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  readonly info: { readonly streamSequence: number; readonly deliveryCount: number };
}

const ENVELOPE = new Set<string>([NATS_MSG_ID_HEADER, ...Object.values(NATS_ENVELOPE_HEADERS)].map((n) => n.toLowerCase()));

/**
 * Decodes a delivered message, or throws why it cannot be applied (no `Nats-Msg-Id`, a body
 * that is not JSON): retrying cannot fix either. @internal
 */
export function toReceivedEvent(m: ReceivedMessage): JetStreamEvent {
  const get = (name: string) => {
    const value = m.headers?.get(name);
    return value === undefined || value === '' ? undefined : value;
  };
  const id = get(NATS_MSG_ID_HEADER);
  if (id === undefined) throw new Error(`message ${m.info.streamSequence} on ${m.subject} has no ${NATS_MSG_ID_HEADER} header`);
  let payload: unknown;
  try {
    payload = m.data.length === 0 ? null : JSON.parse(new TextDecoder().decode(m.data));
  } catch (error) {
    throw new Error(`message ${id} on ${m.subject}: the body is not JSON`, { cause: error });
  }
  const occurred = get(NATS_ENVELOPE_HEADERS.occurredAt);
  const headers: Record<string, string> = {};
  for (const name of m.headers?.keys() ?? []) {
    if (!ENVELOPE.has(name.toLowerCase()) && !name.toLowerCase().startsWith('nats-')) headers[name] = m.headers!.get(name);
  }
  return Object.freeze({
    id,
    aggregateType: get(NATS_ENVELOPE_HEADERS.aggregateType) ?? '',
    key: get(NATS_ENVELOPE_HEADERS.aggregateId) ?? '',
    eventType: get(NATS_ENVELOPE_HEADERS.eventType) ?? '',
    occurredAt: occurred === undefined ? undefined : new Date(occurred),
    payload,
    headers: Object.freeze(headers),
    subject: m.subject,
    streamSequence: m.info.streamSequence,
    deliveryCount: m.info.deliveryCount,
  });
}
