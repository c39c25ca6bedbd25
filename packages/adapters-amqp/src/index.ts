/**
 * Publish outbox events to RabbitMQ (publisher confirms, `mandatory` returns, persistent
 * messages, `message-id` = the outbox id) and consume them into another service's database
 * exactly once in effect, through an inbox.
 *
 * @module @leasehold/adapters-amqp
 */

// Public API of @leasehold/adapters-amqp, name by name.

export type { OutboxMessage, PublishContext, Publisher } from '@leasehold/outbox';
export { amqpPublisher, type AmqpPublisher } from './amqp-publisher.js';
export type { AmqpPublisherOptions, AmqpPublished } from './amqp-publisher-options.js';
export { defaultRoutingKey } from './routing-key.js';
export { AMQP_ENVELOPE_HEADERS } from './amqp-envelope.js';
export { classifyAmqpFailure, type AmqpFailure, type AmqpClassification } from './classify-amqp-failure.js';
export {
  consumeAmqp,
  type AmqpInboxOptions,
  type InboxConsumer,
  type InboxConsumerStats,
  type InboxExecutor,
} from './amqp-consumer.js';
export type { AmqpEvent } from './amqp-event.js';
