import type { Duration } from '../duration.js';

/** Options of one enqueued task. */
export interface EnqueueOptions {
  /** Schema of the task table. @defaultValue 'leasehold' */
  schema?: string;
  /** Run no earlier than this time. Overrides `delay`. */
  runAt?: Date;
  /** Run no earlier than this long from the database's now. @defaultValue 0 */
  delay?: Duration;
  /** Higher runs first. @defaultValue the task's `priority` */
  priority?: number;
  /** Ordering group: tasks of one group run one at a time, in enqueue (= commit) order. */
  groupKey?: string;
  /** While a task of this name with this key is pending or running, return it instead of adding one. */
  dedupKey?: string;
  /**
   * The key the task's limit counts it under (`concurrencyPerKey`, `ratePerKey` of
   * `defineLimit`): a tenant, an API account. Required when the task's limit is keyed, refused
   * otherwise.
   */
  limitKey?: string;
  /** @defaultValue the task's `maxAttempts` */
  maxAttempts?: number;
}
