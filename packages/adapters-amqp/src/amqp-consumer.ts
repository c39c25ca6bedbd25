import { ConfigError, type Duration, type PgQueryable } from '@leasehold/core';
import { checkOptionKeys, KeyedLanes, optionKeys, parseDuration, toError, withTimeout } from '@leasehold/core/internal';
import { createInbox, type Inbox } from '@leasehold/adapters-http';
import type { Channel, ConsumeMessage } from 'amqplib';
import type { Kysely } from 'kysely';
import { toAmqpEvent, type AmqpEvent } from './amqp-event.js';

/** What `apply` gets to write with: the inbox's transaction, as Kysely or as a `pg` client. */
export type InboxExecutor<D> = D extends Kysely<infer DB> ? Kysely<DB> : PgQueryable;

/** Options of {@link consumeAmqp}. */
export interface AmqpInboxOptions<D extends object> {
  /** A channel of yours (`await connection.createChannel()`); its prefetch is set here. */
  channel: Channel;
  /** The queue to consume. */
  queue: string;
  /** Your database (Kysely, or a `pg` pool): the inbox table and your effects live there. */
  db: D;
  /**
   * Applies one event inside the inbox's transaction; runs once per message id. Throwing rolls
   * back (the inbox record too) and the message is requeued after `retryDelay`.
   */
  apply: (event: AmqpEvent, trx: InboxExecutor<D>) => Promise<void>;
  /** The inbox (`createInbox({ schema })` from @leasehold/adapters-http). @defaultValue `createInbox()` */
  inbox?: Inbox;
  /** Events applied at once; events of one aggregate always one at a time, in order. @defaultValue 1 */
  concurrency?: number;
  /** Unacked messages the broker may send ahead (`basic.qos`). @defaultValue 2 × concurrency, at least 16 */
  prefetch?: number;
  /** Wait after a failed `apply` before the message is requeued (`nack`). @defaultValue '1s' */
  retryDelay?: Duration;
  /** Failures of `apply`, and messages that cannot be applied (rejected without requeue). Must not throw. */
  onError?: (error: Error, event: AmqpEvent | undefined) => void;
  /** After each message is acknowledged: applied, or a duplicate the inbox absorbed. */
  onAcked?: (event: AmqpEvent, applied: boolean) => void;
}

/** Counts of an {@link InboxConsumer} so far. */
export interface InboxConsumerStats {
  /** First deliveries applied and committed, then acked. */
  readonly applied: number;
  /** Redeliveries of ids already applied: absorbed by the inbox, acked. */
  readonly duplicates: number;
  /** `apply` failures (rolled back, requeued). */
  readonly failed: number;
  /** Messages that cannot be applied (no message id, body not JSON): rejected, not requeued. */
  readonly rejected: number;
}

/** A running consumer that applies each message once through an inbox. */
export interface InboxConsumer {
  readonly stats: InboxConsumerStats;
  /**
   * Cancels the subscription, lets the events in hand finish (within `timeout`, default
   * '10s'), idempotent. Messages not acked are redelivered once the channel closes.
   */
  stop(options?: { timeout?: Duration }): Promise<void>;
}

const CONSUME_OPTIONS = optionKeys<AmqpInboxOptions<object>>()('consumeAmqp', [
  'channel', 'queue', 'db', 'apply', 'inbox', 'concurrency', 'prefetch', 'retryDelay', 'onError', 'onAcked',
]);

/**
 * Consumes a RabbitMQ queue into your database exactly once in effect: each message is applied
 * through the inbox (its `message-id` recorded in the same transaction as your writes) and
 * acked only after that transaction committed. A crash between commit and ack redelivers the
 * message; the inbox then skips it and it is acked. Events of one aggregate are applied one at
 * a time, in delivery order.
 *
 * @example
 * const channel = await connection.createChannel();
 * const running = await consumeAmqp({
 *   channel, queue: 'billing', db,
 *   apply: async (event, trx) => {
 *     await trx.insertInto('payment').values({ orderId: event.key, ...event.payload }).execute();
 *   },
 * });
 * // on shutdown:
 * await running.stop();
 */
export async function consumeAmqp<D extends object>(options: AmqpInboxOptions<D>): Promise<InboxConsumer> {
  checkOptionKeys(options, CONSUME_OPTIONS);
  const concurrency = checkCount(options.concurrency ?? 1, 'concurrency');
  const prefetch = checkCount(options.prefetch ?? Math.max(16, 2 * concurrency), 'prefetch');
  const retryDelayMs = parseDuration(options.retryDelay ?? '1s', 'retryDelay', { allowZero: true });
  if (typeof options.apply !== 'function') throw new ConfigError('apply', 'Expected `apply` to be a function (event, trx) => Promise<void>');
  if (typeof options.queue !== 'string' || options.queue === '') throw new ConfigError('queue', 'Expected `queue` to be a queue name');
  const inbox = options.inbox ?? createInbox();
  const { channel } = options;
  const stats = { applied: 0, duplicates: 0, failed: 0, rejected: 0 };
  const report = (error: unknown, event?: AmqpEvent) => {
    try {
      options.onError?.(toError(error), event);
    } catch {
      // a listener that throws must not stop the consumer
    }
  };
  // on a closed channel amqplib throws; the broker redelivers what was not acked
  const settle = (run: () => void, event: AmqpEvent | undefined) => {
    try {
      run();
    } catch (error) {
      report(error, event);
    }
  };

  const handle = async (m: ConsumeMessage, event: AmqpEvent): Promise<void> => {
    let applied: boolean;
    try {
      ({ applied } = await inbox.receive(options.db as PgQueryable, event.id, (trx: PgQueryable) => options.apply(event, trx as InboxExecutor<D>)));
    } catch (error) {
      stats.failed++;
      report(error, event);
      // held for retryDelay, so later events of this aggregate wait behind it
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
      settle(() => channel.nack(m, false, true), event);
      return;
    }
    // only after the commit: a crash before this line redelivers, and the inbox absorbs it
    settle(() => channel.ack(m), event);
    if (applied) stats.applied++;
    else stats.duplicates++;
    try {
      options.onAcked?.(event, applied);
    } catch (error) {
      report(error, event);
    }
  };

  const lanes = new KeyedLanes(concurrency);
  // deliveries arrive in queue order; pushing them one after another keeps that order per aggregate
  let queued = Promise.resolve();
  const onMessage = (m: ConsumeMessage | null) => {
    if (m === null) {
      report(new Error(`the broker cancelled the consumer of queue ${options.queue} (queue deleted?)`));
      return;
    }
    let event: AmqpEvent;
    try {
      event = toAmqpEvent(m);
    } catch (error) {
      stats.rejected++;
      report(error);
      settle(() => channel.nack(m, false, false), undefined);
      return;
    }
    queued = queued.then(() => lanes.push(`${event.aggregateType}:${event.key}`, () => handle(m, event)));
  };

  await channel.prefetch(prefetch);
  const { consumerTag } = await channel.consume(options.queue, onMessage, { noAck: false });
  let stopping: Promise<void> | undefined;
  return {
    stats,
    stop: ({ timeout = '10s' } = {}) =>
      (stopping ??= (async () => {
        const timeoutMs = parseDuration(timeout, 'timeout', { allowZero: true });
        await withTimeout(
          (async () => {
            await channel.cancel(consumerTag).catch(() => undefined);
            await queued;
            await lanes.idle();
          })(),
          timeoutMs,
          () => new Error(`consumer did not stop within ${timeoutMs} ms`),
        ).catch(report);
      })()),
  };
}

function checkCount(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000) {
    throw new ConfigError(option, `Expected \`${option}\` to be an integer between 1 and 1000, got ${String(value)}`);
  }
  return value;
}
