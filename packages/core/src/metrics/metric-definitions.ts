/** One instrument leasehold records: its OpenTelemetry name, kind, unit and meaning. */
export interface MetricDefinition {
  readonly name: string;
  readonly instrument: 'counter' | 'histogram' | 'gauge';
  /** UCUM unit, as OpenTelemetry writes it (`s`, `{task}`). */
  readonly unit: string;
  readonly description: string;
  /**
   * The name OpenTelemetry's Prometheus exporter gives it (dots to underscores, `_total` on
   * counters; a histogram's series add `_bucket`, `_sum` and `_count`), which
   * `leasehold stats --format prometheus` writes too.
   */
  readonly prometheus: string;
}

/**
 * Counters a worker keeps per task name (event type for the outbox dispatcher), with the
 * attributes `messaging.system`, `messaging.destination.name` and `leasehold.table`. Each counts
 * what the worker's fenced write recorded, so they add up to what the table shows.
 */
export const TASK_COUNTERS = {
  claimed: counter('leasehold.task.claimed', 'Tasks a claim handed to this worker.'),
  succeeded: counter('leasehold.task.succeeded', 'Tasks whose handler returned and whose fenced `done` was written.'),
  retried: counter('leasehold.task.retried', 'Attempts that failed and were scheduled again with backoff.'),
  deferred: counter('leasehold.task.deferred', 'Attempts the handler deferred (DeferError); the attempt was refunded.'),
  dead: counter('leasehold.task.dead', 'Tasks this worker sent dead: permanent failure, attempts exhausted, invalid payload, defer age.'),
  lease_lost: counter('leasehold.task.lease_lost', 'Attempts whose lease moved on (heartbeat or fenced write refused): their result was not written.'),
} as const;

/** The outcomes counted by {@link TASK_COUNTERS}, besides `claimed`. */
export type CountedOutcome = Exclude<keyof typeof TASK_COUNTERS, 'claimed'>;

/** Histograms a worker records per task name, with the counters' attributes. */
export const TASK_HISTOGRAMS = {
  wait: histogram(
    'leasehold.task.wait.duration',
    'From when the task became available (enqueued and due, or its backoff or deferral over) to its handler start; by the database clock up to the claim.',
  ),
  handler: histogram('leasehold.task.handler.duration', "The handler's run, from its start to its return or throw."),
} as const;

/**
 * Gauges per queue (task name or event type) with `messaging.system`,
 * `messaging.destination.name` and `leasehold.table`, read by `createQueueMetrics` with one
 * statement per table and period (the figures of `queueStats` and `leasehold stats`).
 */
export const QUEUE_GAUGES = {
  pending: gauge('leasehold.queue.pending', '{task}', 'Tasks waiting to run (blocked ones included).'),
  processing: gauge('leasehold.queue.processing', '{task}', 'Tasks running now (leased).'),
  dead: gauge('leasehold.queue.dead', '{task}', 'Dead tasks, waiting for a person to retry or skip them.'),
  oldestPendingAge: gauge('leasehold.queue.oldest_pending_age', 's', 'How long the longest-waiting unfinished task has waited (0 when none waits).'),
} as const;

/** Every instrument, in the order of the table in docs/observability.md. */
export const METRICS: readonly MetricDefinition[] = [
  ...Object.values(TASK_COUNTERS),
  ...Object.values(TASK_HISTOGRAMS),
  ...Object.values(QUEUE_GAUGES),
];

/**
 * Bucket bounds in seconds: OpenTelemetry's advice for durations in seconds, widened to
 * sub-millisecond handlers and to waits of an hour.
 */
export const DURATION_BUCKETS: readonly number[] = [
  0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
];

function counter(name: string, description: string): MetricDefinition {
  return { name, instrument: 'counter', unit: '{task}', description, prometheus: `${name.replaceAll('.', '_')}_total` };
}

function histogram(name: string, description: string): MetricDefinition {
  return { name, instrument: 'histogram', unit: 's', description, prometheus: name.replaceAll('.', '_') };
}

function gauge(name: string, unit: string, description: string): MetricDefinition {
  return { name, instrument: 'gauge', unit, description, prometheus: name.replaceAll('.', '_') };
}
