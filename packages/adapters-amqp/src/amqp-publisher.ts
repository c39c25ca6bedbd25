import { PermanentError, RetryableError } from '@leasehold/core';
import { untilAborted, withTimeout } from '@leasehold/core/internal';
import type { OutboxMessage, PublishContext, Publisher } from '@leasehold/outbox';
import { amqpProperties, encodeBody, type AmqpMessageProperties } from './amqp-envelope.js';
import { AmqpFailureError, AmqpLink, type AmqpChannel } from './amqp-link.js';
import { normalizeAmqpOptions, type AmqpPublisherOptions, type NormalizedAmqpOptions } from './amqp-publisher-options.js';
import { classifyAmqpFailure } from './classify-amqp-failure.js';
import { checkedRoutingKey } from './routing-key.js';

/** A {@link Publisher} to RabbitMQ, with the connection it holds. */
export interface AmqpPublisher extends Publisher {
  /** Closes the connection within 5 s; idempotent. Call it after `await dispatcher.stop()`. */
  close(): Promise<void>;
}

/**
 * An outbox publisher to RabbitMQ (AMQP 0-9-1) on a confirm channel: each message is
 * published persistent, with `message-id` = the outbox id, with `mandatory` (a message no
 * queue is bound for comes back and goes dead), and `publish` resolves only once the broker
 * confirmed it (for a quorum queue: stored on a majority). Nacks, missing confirms and lost
 * channels or connections are retryable ({@link classifyAmqpFailure}); the connection is
 * shared, and reopened after a loss with full-jitter backoff. Every wait is bounded by
 * `timeout` and the dispatcher's signal.
 *
 * @example
 * const publisher = amqpPublisher({
 *   url: 'amqp://guest:guest@127.0.0.1:5672',
 *   exchange: 'events',
 *   setup: async (ch) => {
 *     await ch.assertExchange('events', 'topic', { durable: true });
 *     await ch.assertQueue('billing', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
 *     await ch.bindQueue('billing', 'events', 'order.#');
 *   },
 * });
 * const dispatcher = createDispatcher({ pool, publisher });
 * await dispatcher.start();
 * // on shutdown:
 * await dispatcher.stop({ timeout: '10s' });
 * await publisher.close();
 */
export function amqpPublisher(options: AmqpPublisherOptions): AmqpPublisher {
  const normalized = normalizeAmqpOptions(options);
  const link = new AmqpLink(normalized);
  return Object.freeze({
    publish: (message: OutboxMessage, context?: PublishContext) => publish(normalized, link, message, context?.signal),
    close: () => link.close(5_000),
  });
}

async function publish(options: NormalizedAmqpOptions, link: AmqpLink, message: OutboxMessage, signal: AbortSignal | undefined): Promise<void> {
  const routingKey = checkedRoutingKey(options.routingKey(message), message);
  const what = `publish of message ${message.id} to exchange ${JSON.stringify(options.exchange)} with routing key ${JSON.stringify(routingKey)}`;
  const messageId = options.messageId(message);
  if (typeof messageId !== 'string' || messageId === '') {
    throw new PermanentError(`message ${message.id}: messageId(message) must be a non-empty string`);
  }
  const body = encodeBody(options.body(message), message);
  const properties = amqpProperties(message, messageId, options);
  const deadline = Date.now() + options.timeoutMs;
  try {
    const channel = await untilAborted(connected(link, deadline), signal, what);
    const confirmed = withTimeout(confirm(channel, options.exchange, routingKey, body, properties), Math.max(1, deadline - Date.now()), () =>
      new AmqpFailureError({ kind: 'timeout', ms: options.timeoutMs }),
    );
    await untilAborted(confirmed, signal, what);
    options.onPublished?.({ message, exchange: options.exchange, routingKey });
  } catch (error) {
    if (!(error instanceof AmqpFailureError)) throw error; // the dispatcher's own reason (lease lost, shutdown, timeout)
    const verdict = classifyAmqpFailure(error.failure);
    const text = `${what}: ${verdict.reason}`;
    throw verdict.kind === 'permanent' ? new PermanentError(text, { cause: error.cause }) : new RetryableError(text, { cause: error.cause });
  }
}

/**
 * The link's channel; while the broker is unreachable, waits for the next connection attempt
 * as long as it falls before `deadline`. An attempt thus spends its `timeout` trying, as a
 * slow broker would make it, instead of failing at once: a 10 s outage does not burn a
 * message's attempts in a few seconds.
 */
async function connected(link: AmqpLink, deadline: number): Promise<AmqpChannel> {
  for (;;) {
    try {
      return await link.get();
    } catch (error) {
      const waitMs = link.retryInMs;
      const unavailable = error instanceof AmqpFailureError && error.failure.kind === 'unavailable';
      if (!unavailable || Date.now() + waitMs >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.max(10, waitMs)));
    }
  }
}

/** Publishes on the confirm channel; resolves on the broker's ack, unless the message came back. */
function confirm(link: AmqpChannel, exchange: string, routingKey: string, body: Buffer, properties: AmqpMessageProperties): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const entry = link.track(properties.messageId);
    const settled = (error: Error | null) => {
      link.settle(entry);
      if (error) {
        const failure = error.message === 'message nacked'
          ? ({ kind: 'nacked' } as const)
          : ({ kind: 'channel-closed', detail: link.closeReason ?? error.message } as const);
        reject(new AmqpFailureError(failure, { cause: error }));
      } else if (entry.returned) {
        reject(new AmqpFailureError({ kind: 'returned', ...entry.returned }));
      } else {
        resolve();
      }
    };
    try {
      // the return value only says whether the socket buffer is full; the confirm is what counts
      link.channel.publish(exchange, routingKey, body, { ...properties, appId: properties.appId }, (error: unknown) =>
        settled(error ? (error as Error) : null),
      );
    } catch (error) {
      // amqplib throws at once on a channel that already closed
      link.settle(entry);
      reject(new AmqpFailureError({ kind: 'channel-closed', detail: link.closeReason ?? (error as Error).message }, { cause: error }));
    }
  });
}
