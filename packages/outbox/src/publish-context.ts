import type { HandlerContext } from '@leasehold/core';
import type { PublishContext } from './publisher.js';

/**
 * The {@link PublishContext} of one publish, its signal made only when the publisher reads it:
 * the worker makes the handler's `AbortController` on first read of `ctx.signal`, some 3 µs per
 * message that a publisher ignoring its signal (or reading it only to time out) need not pay.
 * Aborting works the same either way: the worker stops waiting for the publish.
 * @internal
 */
export class LazyPublishContext implements PublishContext {
  readonly #ctx: HandlerContext;

  constructor(ctx: HandlerContext) {
    this.#ctx = ctx;
  }

  get signal(): AbortSignal {
    return this.#ctx.signal;
  }
}
