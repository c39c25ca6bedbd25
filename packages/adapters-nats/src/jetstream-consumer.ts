import { ConfigError, type Duration, type PgQueryable } from '@leasehold/core';
import { checkOptionKeys, KeyedLanes, optionKeys, parseDuration, toError, withTimeout } from '@leasehold/core/internal';
import { createInbox, type Inbox } from '@leasehold/adapters-http';
import type { Consumer, JsMsg } from '@nats-io/jetstream';
import type { Kysely } from 'kysely';
import { toReceivedEvent, type JetStreamEvent } from './received-event.js';

/** What `apply` gets to write with: the inbox's transaction, as Kysely or as a `pg` client. */
export type InboxExecutor<D> = D extends Kysely<infer DB> ? Kysely<DB> : PgQueryable;

/** Options of {@link consumeJetStream}. */
export interface JetStreamInboxOptions<D extends object> {
  /** A pull consumer: `await jetstream(nc).consumers.get(stream, durableName)`. */
  consumer: Consumer;
  /** Your database (Kysely, or a `pg` pool): the inbox table and your effects live there. */
  db: D;
  /**
   * Applies one event inside the inbox's transaction; runs once per message id. Throwing rolls
   * back (the inbox record too) and the message is redelivered after `retryDelay`.
   */
  apply: (event: JetStreamEvent, trx: InboxExecutor<D>) => Promise<void>;
  /** The inbox (`createInbox({ schema })` from @leasehold/adapters-http). @defaultValue `createInbox()` */
  inbox?: Inbox;
  /** Events applied at once; events of one aggregate always one at a time, in order. @defaultValue 1 */
  concurrency?: number;
  /** Redelivery delay after `apply` failed (`nak`). @defaultValue '1s' */
  retryDelay?: Duration;
  /** Messages pulled ahead. @defaultValue 2 × concurrency, at least 16 */
  maxMessages?: number;
  /**
   * How long one pull request lives (at least 1 s); the server sends heartbeats every half of
   * it. A pull lost on the way (the consumer's leader moved, the connection failed over) is
   * noticed after two missed heartbeats and pulled again, so this bounds how long delivery can
   * stall after such a fault. The client's own default, 30 s, stalled delivery for 30 s after a
   * stream leader was killed. @defaultValue '5s'
   */
  pullExpires?: Duration;
  /** Failures of `apply`, and messages that cannot be applied (terminated). Must not throw. */
  onError?: (error: Error, event: JetStreamEvent | undefined) => void;
  /** After each message is acknowledged: applied, or a duplicate the inbox absorbed. */
  onAcked?: (event: JetStreamEvent, applied: boolean) => void;
}

/** Counts of an {@link InboxConsumer} so far. */
export interface InboxConsumerStats {
  /** First deliveries applied and committed, then acked. */
  readonly applied: number;
  /** Redeliveries of ids already applied: absorbed by the inbox, acked. */
  readonly duplicates: number;
  /** `apply` failures (rolled back, redelivered later). */
  readonly failed: number;
  /** Messages that cannot be applied (no message id, body not JSON): terminated. */
  readonly rejected: number;
}

/** A running consumer that applies each message once through an inbox. */
export interface InboxConsumer {
  readonly stats: InboxConsumerStats;
  /**
   * Stops pulling, lets the events in hand finish (within `timeout`, default '10s'),
   * idempotent. Messages not acked are redelivered to the next consumer.
   */
  stop(options?: { timeout?: Duration }): Promise<void>;
}

const CONSUME_OPTIONS = optionKeys<JetStreamInboxOptions<object>>()('consumeJetStream', [
  'consumer', 'db', 'apply', 'inbox', 'concurrency', 'retryDelay', 'maxMessages', 'pullExpires', 'onError', 'onAcked',
]);

/**
 * Consumes a JetStream pull consumer into your database exactly once in effect: each message
 * is applied through the inbox (its `Nats-Msg-Id` recorded in the same transaction as your
 * writes) and acked only after that transaction committed. A crash between commit and ack
 * redelivers the message; the inbox then skips it and it is acked. Events of one aggregate
 * are applied one at a time, in delivery order.
 *
 * @example
 * const consumer = await jetstream(nc).consumers.get('ORDERS', 'billing');
 * const running = await consumeJetStream({
 *   consumer, db,
 *   apply: async (event, trx) => {
 *     await trx.insertInto('payment').values({ orderId: event.key, ...event.payload }).execute();
 *   },
 * });
 * // on shutdown:
 * await running.stop();
 */
export async function consumeJetStream<D extends object>(options: JetStreamInboxOptions<D>): Promise<InboxConsumer> {
  checkOptionKeys(options, CONSUME_OPTIONS);
  const concurrency = checkConcurrency(options.concurrency ?? 1);
  const retryDelayMs = parseDuration(options.retryDelay ?? '1s', 'retryDelay', { allowZero: true });
  const pullExpiresMs = parseDuration(options.pullExpires ?? '5s', 'pullExpires');
  if (pullExpiresMs < 1_000) throw new ConfigError('pullExpires', `Expected \`pullExpires\` to be at least 1 s, got ${pullExpiresMs} ms`);
  const inbox = options.inbox ?? createInbox();
  if (typeof options.apply !== 'function') throw new ConfigError('apply', 'Expected `apply` to be a function (event, trx) => Promise<void>');
  const stats = { applied: 0, duplicates: 0, failed: 0, rejected: 0 };
  const report = (error: unknown, event?: JetStreamEvent) => {
    try {
      options.onError?.(toError(error), event);
    } catch {
      // a listener that throws must not stop the consumer
    }
  };

  const handle = async (m: JsMsg, event: JetStreamEvent): Promise<void> => {
    let applied: boolean;
    try {
      ({ applied } = await inbox.receive(options.db as PgQueryable, event.id, (trx: PgQueryable) => options.apply(event, trx as InboxExecutor<D>)));
    } catch (error) {
      stats.failed++;
      report(error, event);
      m.nak(retryDelayMs);
      return;
    }
    // only after the commit: a crash before this line redelivers, and the inbox absorbs it
    m.ack();
    if (applied) stats.applied++;
    else stats.duplicates++;
    try {
      options.onAcked?.(event, applied);
    } catch (error) {
      report(error, event);
    }
  };

  const lanes = new KeyedLanes(concurrency);
  const messages = await options.consumer.consume({ max_messages: options.maxMessages ?? Math.max(16, 2 * concurrency), expires: pullExpiresMs });
  const loop = (async () => {
    for await (const m of messages) {
      let event: JetStreamEvent;
      try {
        event = toReceivedEvent(m);
      } catch (error) {
        stats.rejected++;
        report(error);
        m.term(toError(error).message.slice(0, 200));
        continue;
      }
      await lanes.push(`${event.aggregateType}:${event.key}`, () => handle(m, event));
    }
  })().catch(report);

  let stopping: Promise<void> | undefined;
  return {
    stats,
    stop: ({ timeout = '10s' } = {}) =>
      (stopping ??= (async () => {
        const timeoutMs = parseDuration(timeout, 'timeout', { allowZero: true });
        await withTimeout(
          (async () => {
            await messages.close();
            await loop;
            await lanes.idle();
          })(),
          timeoutMs,
          () => new Error(`consumer did not stop within ${timeoutMs} ms`),
        ).catch(report);
      })()),
  };
}

function checkConcurrency(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000) {
    throw new ConfigError('concurrency', `Expected \`concurrency\` to be an integer between 1 and 1000, got ${String(value)}`);
  }
  return value;
}
