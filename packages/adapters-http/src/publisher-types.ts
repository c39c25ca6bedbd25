// A structural copy of @leasehold/outbox's `Publisher` boundary, kept until that package exports
// it: TypeScript compares shapes, so a publisher built here is accepted by the dispatcher either way.

/** One outbox event as the dispatcher hands it to a publisher. */
export interface OutboxMessage {
  /** Stable across retries and dispatchers: the idempotency key downstream. */
  readonly id: string;
  /** Aggregate id (the ordering group). */
  readonly key: string;
  readonly aggregateType: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  /** Claims so far, this one included. */
  readonly attempts: number;
  readonly createdAt: Date;
}

/** What the dispatcher passes along with each message. */
export interface PublishContext {
  /** Fires when the lease is lost or the worker shuts down: stop and return. */
  readonly signal: AbortSignal;
}

/**
 * Delivers one message. Resolves on success; throws `RetryableError` (optionally with
 * `retryAfterMs`), `PermanentError` or `DeferError` from `@leasehold/core` otherwise.
 */
export interface Publisher {
  publish(message: OutboxMessage, context: PublishContext): Promise<void>;
}
