/**
 * Every status a leased row can be in. The table's CHECK constraint lists the same values
 * (a test keeps the two equal); `docs/state-machine.md` draws the transitions.
 */
export const TASK_STATUSES = [
  /** Waiting for `available_at`. In: enqueue, retry, defer, `retryDead`. Out: claim. */
  'pending',
  /** Owned by the lease holder until `lease_until`. In: claim. Out: fenced finalize, park, cancel, reclaim, reap. */
  'processing',
  /**
   * Parked by its workflow (a sleep, children, a signal): no lease, no slot, no attempt spent.
   * In: a fenced park. Out: its wake time (the claim), its last child's end, a signal, cancel.
   */
  'waiting',
  /** Finished. In: fenced finalize (success), `skipDead`. Out: retention only. */
  'done',
  /** Needs a person. In: permanent failure, retries exhausted, reap, invalid payload. Out: `retryDead`, `skipDead`, cancel. */
  'dead',
  /** Ended by `cancelTask` (it or its parent). Final. Core's task table only. */
  'cancelled',
] as const;

/** One of {@link TASK_STATUSES}. */
export type TaskStatus = (typeof TASK_STATUSES)[number];
