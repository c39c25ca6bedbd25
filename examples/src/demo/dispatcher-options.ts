import type { PgPoolLike } from '@leasehold/core';
import type { DispatcherOptions, Publisher } from '@leasehold/outbox';
import { BACKOFF, LEASE, POLL_INTERVAL, PUBLISH_TIMEOUT, SHOP_SCHEMA } from './settings.js';

/** The options every demo dispatcher (in this process or the child) runs with. */
export function dispatcherOptions(pool: PgPoolLike, publisher: Publisher, owner: string): DispatcherOptions {
  return {
    pool,
    publisher,
    schema: SHOP_SCHEMA,
    owner,
    concurrency: 4,
    lease: LEASE,
    publishTimeout: PUBLISH_TIMEOUT,
    backoff: BACKOFF,
    pollInterval: POLL_INTERVAL,
  };
}
