/**
 * Every status a leased row can be in. The table's CHECK constraint lists the same values
 * (a test keeps the two equal); `docs/state-machine.md` draws the transitions.
 */
export const TASK_STATUSES = [
  /** Waiting for `available_at`. In: enqueue, retry, defer, `retryDead`. Out: claim. */
  'pending',
  /** Owned by the lease holder until `lease_until`. In: claim. Out: fenced finalize, reclaim, reap. */
  'processing',
  /** Finished. In: fenced finalize (success), `skipDead`. Out: retention only. */
  'done',
  /** Needs a person. In: permanent failure, retries exhausted, reap, invalid payload. Out: `retryDead`, `skipDead`. */
  'dead',
] as const;

/** One of {@link TASK_STATUSES}. */
export type TaskStatus = (typeof TASK_STATUSES)[number];
