/**
 * One outbox message as a {@link Publisher} receives it. Every field is what the producer
 * recorded with `add`, plus the delivery attempt.
 */
export interface OutboxMessage<Payload = unknown> {
  /**
   * The outbox row id (a bigint, as a string). Stable across retries and redeliveries: send it
   * downstream as the message id / `Idempotency-Key`, so consumers can drop duplicates.
   */
  readonly id: string;
  /** The aggregate id: the broker's partition / ordering key. */
  readonly key: string;
  /** Kind of aggregate, e.g. `order`. */
  readonly aggregateType: string;
  /** Kind of event, e.g. `OrderPaid`. */
  readonly eventType: string;
  /** The event body, as stored (JSON). */
  readonly payload: Payload;
  /** String headers recorded with the event (trace ids, content type …). */
  readonly headers: Readonly<Record<string, string>>;
  /** Delivery attempts so far, this one included (a crashed attempt counts). */
  readonly attempts: number;
  /** When the producer's transaction inserted the message (database time). */
  readonly createdAt: Date;
}

/** What {@link Publisher.publish} receives besides the message. */
export interface PublishContext {
  /**
   * Fires when the publish timeout runs out, the dispatcher shuts down, or the lease is lost.
   * Pass it to your SDK / `fetch`; `signal.reason` says which.
   */
  readonly signal: AbortSignal;
}

/**
 * The boundary between the dispatcher and a broker or API. `publish` resolves when the message
 * is accepted downstream. It maps its SDK's failures to the outcome they call for:
 * `RetryableError` (timeout, 5xx, 429: retried with backoff), `PermanentError` (validation
 * error, unknown destination: the message goes dead), `DeferError` (not yet: retried later
 * without spending an attempt). Anything else it throws is treated as retryable.
 *
 * @example
 * const publisher: Publisher = {
 *   async publish(message, { signal }) {
 *     const res = await fetch(url, {
 *       method: 'POST', signal, body: JSON.stringify(message.payload),
 *       headers: { 'Idempotency-Key': message.id, 'content-type': 'application/json' },
 *     });
 *     if (res.status >= 500 || res.status === 429) throw new RetryableError(`HTTP ${res.status}`);
 *     if (!res.ok) throw new PermanentError(`HTTP ${res.status}`);
 *   },
 * };
 */
export interface Publisher {
  /**
   * Sends one message downstream: resolves once it is accepted there, throws (as above) when it
   * is not. Pass `context.signal` on to the SDK or `fetch`.
   */
  publish(message: OutboxMessage, context: PublishContext): Promise<void>;
  /**
   * Releases what the publisher holds open (a broker connection, a channel). Optional: an
   * HTTP publisher holds nothing. Call it once no `publish` runs any more, i.e. after
   * `await dispatcher.stop()`; it resolves within its own bound and is idempotent. A `publish`
   * after `close()` fails with a retryable error.
   *
   * @example
   * await dispatcher.stop({ timeout: '10s' });
   * await publisher.close?.();
   */
  close?(): Promise<void>;
}
