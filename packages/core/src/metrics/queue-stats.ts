import { checkOptionKeys, optionKeys } from '../input/options.js';
import { taskTable, type LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { leaseQueueStats, type QueueStats } from '../sql/lease-queue-stats.js';

/** Options of {@link queueStats}. */
export interface QueueStatsOptions {
  /** Schema of core's task table. @defaultValue 'leasehold' */
  schema?: string;
  /**
   * Another leased table to read instead of core's task table, e.g. `outboxTable(schema)` from
   * `@leasehold/outbox` for figures per event type. @defaultValue `taskTable(schema)`
   */
  table?: LeasedTable<unknown>;
}

const QUEUE_STATS_OPTIONS = optionKeys<QueueStatsOptions>()('queueStats', ['schema', 'table']);

/**
 * The figures of every queue of a table, one entry per task name (per event type for the
 * outbox), sorted by name: rows pending (blocked ones included, and how many are blocked),
 * processing, done and dead, the oldest pending age and the expired leases. Read in one
 * statement, so the numbers come from one snapshot; it takes no locks but counts every row,
 * finished ones too, so purge `done` rows to keep it cheap. The same figures as `leasehold
 * stats`, the dashboard and the `leasehold.queue.*` gauges (see docs/observability.md).
 *
 * @example
 * for (const q of await queueStats(pool)) {
 *   console.log(`${q.name}: ${q.pending} pending, oldest ${q.oldestPendingAgeMs ?? 0} ms, ${q.dead} dead`);
 * }
 */
export function queueStats(executor: Executor, options: QueueStatsOptions = {}): Promise<QueueStats[]> {
  checkOptionKeys(options, QUEUE_STATS_OPTIONS);
  return leaseQueueStats(executor, options.table ?? taskTable(options.schema));
}
