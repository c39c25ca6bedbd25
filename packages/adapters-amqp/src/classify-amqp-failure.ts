import { assertNever } from '@leasehold/core/internal';

/** What went wrong with one publish on a confirm channel. */
export type AmqpFailure =
  /** `basic.return` before the ack: `mandatory` and no queue bound for the routing key. */
  | { readonly kind: 'returned'; readonly replyCode: number; readonly replyText: string; readonly exchange: string; readonly routingKey: string }
  /** `basic.nack`: the broker could not take responsibility (internal error, queue full with `reject-publish`). */
  | { readonly kind: 'nacked' }
  /** No confirm within the publisher's `timeout`. */
  | { readonly kind: 'timeout'; readonly ms: number }
  /** The channel closed before the confirm (by the broker, e.g. 404 for a missing exchange, or with its connection). */
  | { readonly kind: 'channel-closed'; readonly detail: string }
  /** No connection or channel could be opened, or the link is waiting out its reconnect backoff. */
  | { readonly kind: 'unavailable'; readonly detail: string }
  /** The publisher was closed. */
  | { readonly kind: 'closed' };

/** The verdict on an {@link AmqpFailure}. */
export interface AmqpClassification {
  readonly kind: 'retryable' | 'permanent';
  readonly reason: string;
}

/**
 * Classifies a failed publish, purely: an unroutable return is `permanent` (no queue would
 * ever get the message: fix the bindings, then `leasehold dead retry`); everything else is
 * `retryable` — a nack, a missing confirm, a lost channel or connection leave the message's
 * fate open, and the retry carries the same `message-id` for the consumer's inbox.
 *
 * @example
 * classifyAmqpFailure({ kind: 'returned', replyCode: 312, replyText: 'NO_ROUTE', exchange: 'events', routingKey: 'order.paid' });
 * // { kind: 'permanent', reason: 'unroutable: 312 NO_ROUTE (exchange "events", routing key "order.paid")' }
 */
export function classifyAmqpFailure(failure: AmqpFailure): AmqpClassification {
  switch (failure.kind) {
    case 'returned':
      return {
        kind: 'permanent',
        reason: `unroutable: ${failure.replyCode} ${failure.replyText} (exchange ${JSON.stringify(failure.exchange)}, routing key ${JSON.stringify(failure.routingKey)})`,
      };
    case 'nacked':
      return { kind: 'retryable', reason: 'nacked by the broker' };
    case 'timeout':
      return { kind: 'retryable', reason: `no confirm within ${failure.ms} ms` };
    case 'channel-closed':
      return { kind: 'retryable', reason: `channel closed before the confirm: ${failure.detail}` };
    case 'unavailable':
      return { kind: 'retryable', reason: `broker unavailable: ${failure.detail}` };
    case 'closed':
      return { kind: 'retryable', reason: 'publisher is closed' };
    default:
      return assertNever(failure);
  }
}
