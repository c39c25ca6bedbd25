import type { LeasedTable } from '../leased-table.js';
import type { LiveQueueStats } from '../sql/lease-live-stats.js';
import { ATTR, MESSAGING_SYSTEM } from '../telemetry/attributes.js';
import { QUEUE_GAUGES, type MetricDefinition } from './metric-definitions.js';

/** One `leasehold.queue.*` gauge and the figure of `QueueStats` it reports (none needs `done`). */
export interface QueueGauge {
  readonly definition: MetricDefinition;
  /** Its value for one queue, in the gauge's unit. */
  readonly value: (stats: LiveQueueStats) => number;
}

/**
 * The queue gauges and what each reports: what `createQueueMetrics` observes and `leasehold stats
 * --format prometheus` prints, so the two cannot drift apart.
 * @internal
 */
export const QUEUE_GAUGE_VALUES: readonly QueueGauge[] = [
  { definition: QUEUE_GAUGES.pending, value: (s) => s.pending },
  { definition: QUEUE_GAUGES.processing, value: (s) => s.processing },
  { definition: QUEUE_GAUGES.dead, value: (s) => s.dead },
  // none waiting reads 0: a gauge has no "absent" value per series
  { definition: QUEUE_GAUGES.oldestPendingAge, value: (s) => (s.oldestPendingAgeMs ?? 0) / 1000 },
];

/** The attributes of one queue's series: the metrics' common ones. @internal */
export function queueAttributes(table: Pick<LeasedTable<unknown>, 'schema' | 'table'>, name: string): Readonly<Record<string, string>> {
  return Object.freeze({ [ATTR.system]: MESSAGING_SYSTEM, [ATTR.destination]: name, [ATTR.table]: `${table.schema}.${table.table}` });
}
