/**
 * Publish outbox events to NATS JetStream (`Nats-Msg-Id` = the outbox id, PubAck awaited,
 * failures classified) and consume them into another service's database exactly once in effect,
 * through an inbox.
 *
 * @module @leasehold/adapters-nats
 */

// Public API of @leasehold/adapters-nats, name by name.

export type { OutboxMessage, PublishContext, Publisher } from '@leasehold/outbox';
export { jetStreamPublisher, type JetStreamPublisher } from './jetstream-publisher.js';
export type { JetStreamPublisherOptions, JetStreamPublished } from './jetstream-publisher-options.js';
export { defaultSubject } from './subject.js';
export { NATS_ENVELOPE_HEADERS, NATS_MSG_ID_HEADER } from './nats-headers.js';
export { classifyNatsError, type NatsClassification } from './classify-nats-error.js';
export {
  consumeJetStream,
  type JetStreamInboxOptions,
  type InboxConsumer,
  type InboxConsumerStats,
  type InboxExecutor,
} from './jetstream-consumer.js';
export type { JetStreamEvent } from './received-event.js';
