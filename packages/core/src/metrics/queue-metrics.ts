import type { BatchObservableResult, Meter, Observable } from '@opentelemetry/api';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { parseDuration, type Duration } from '../duration.js';
import { ConfigError, toError } from '../errors.js';
import { taskTable, type LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { leaseLiveQueueStats, type LiveQueueStats } from '../sql/lease-live-stats.js';
import { leaseQueueStats } from '../sql/lease-queue-stats.js';
import { otel } from '../telemetry/otel-api.js';
import type { WorkerLogger } from '../worker/worker-log.js';
import { QUEUE_GAUGE_VALUES, queueAttributes } from './queue-gauges.js';

/** Options of {@link createQueueMetrics}. */
export interface QueueMetricsOptions {
  /** Where to read the figures: a `pg` pool (or a Kysely instance). */
  pool: Executor;
  /** Schema of core's task table. @defaultValue 'leasehold' */
  schema?: string;
  /**
   * The leased tables to observe, e.g. `[taskTable(schema), outboxTable(schema)]`.
   * @defaultValue `[taskTable(schema)]`
   */
  tables?: readonly LeasedTable<unknown>[];
  /** Read the figures this often: one statement per table, whatever the number of queues and scrapes. @defaultValue '15s' */
  interval?: Duration;
  /** Where a failed read is reported (warn, once until a read succeeds again); `null` for nowhere. @defaultValue console */
  logger?: Pick<WorkerLogger, 'warn'> | null;
}

/** The `leasehold.queue.*` gauges of a process; see {@link createQueueMetrics}. */
export interface QueueMetrics {
  /**
   * Reads the figures once, then every `interval`, and reports them through the registered
   * MeterProvider. Without OpenTelemetry or without a MeterProvider it does nothing.
   */
  start(): Promise<void>;
  /** Stops reading and reporting. Idempotent, also before `start()`. */
  stop(): void;
}

interface Observed {
  readonly attributes: Readonly<Record<string, string>>;
  readonly stats: LiveQueueStats;
}

const QUEUE_METRICS_OPTIONS = optionKeys<QueueMetricsOptions>()('createQueueMetrics', ['pool', 'schema', 'tables', 'interval', 'logger']);

/**
 * Observable gauges per queue (task name, or event type) of each table: `leasehold.queue.pending`,
 * `.processing`, `.dead` and `.oldest_pending_age` (see docs/observability.md). A timer reads
 * each table with one statement every `interval`, and collections report the latest figures:
 * however often Prometheus scrapes and however many queues there are, the database answers one
 * statement per table and interval. The first read is {@link queueStats}'s, which counts every
 * row; later ones read only unfinished and dead rows (from the claim's, the leases' and the dead
 * rows' indexes), so they cost what is queued, not what the table keeps. A queue seen once keeps
 * its series, at 0 when it has nothing left. One per process is enough; a failed read drops that
 * table's figures until a read succeeds, rather than reporting stale ones.
 *
 * @example
 * const queues = createQueueMetrics({ pool, tables: [taskTable(), outboxTable()] });
 * await queues.start();
 * // on shutdown:
 * queues.stop();
 */
export function createQueueMetrics(options: QueueMetricsOptions): QueueMetrics {
  checkOptionKeys(options, QUEUE_METRICS_OPTIONS);
  if (typeof (options.pool as { query?: unknown } | undefined)?.query !== 'function' && typeof (options.pool as { getExecutor?: unknown } | undefined)?.getExecutor !== 'function') {
    throw new ConfigError('pool', 'Expected `pool` to be a pg Pool or a Kysely instance');
  }
  const tables = options.tables ?? [taskTable(options.schema)];
  if (tables.length === 0) throw new ConfigError('tables', 'Expected `tables` to list at least one leased table');
  const intervalMs = parseDuration(options.interval ?? '15s', 'interval');
  return new QueueGauges(options.pool, tables, intervalMs, options.logger === undefined ? console : options.logger);
}

class QueueGauges implements QueueMetrics {
  readonly #pool: Executor;
  readonly #tables: readonly LeasedTable<unknown>[];
  readonly #intervalMs: number;
  readonly #logger: QueueMetricsOptions['logger'];
  /** The latest figures, per table. */
  readonly #observed = new Map<LeasedTable<unknown>, Observed[]>();
  /** Per table, every name read so far: a queue that empties reports 0s rather than vanishing. */
  readonly #names = new Map<LeasedTable<unknown>, Set<string>>();
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> | undefined;
  #failing = false;
  #stopped = false;
  #unregister: (() => void) | undefined;

  constructor(pool: Executor, tables: readonly LeasedTable<unknown>[], intervalMs: number, logger: QueueMetricsOptions['logger']) {
    this.#pool = pool;
    this.#tables = tables;
    this.#intervalMs = intervalMs;
    this.#logger = logger;
  }

  async start(): Promise<void> {
    if (this.#stopped || this.#unregister !== undefined) return;
    const api = await otel();
    if (api === null || this.#stopped) return;
    const meter = api.metrics.getMeter('leasehold');
    if (meter === api.createNoopMeter()) return; // no MeterProvider registered
    await this.#read();
    if (this.#stopped) return;
    this.#unregister = this.#observe(meter);
    this.#timer = setInterval(() => void this.#read(), this.#intervalMs);
    this.#timer.unref(); // figures for a process that runs anyway; never the reason it keeps running
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#unregister?.();
    this.#unregister = undefined;
  }

  #observe(meter: Meter): () => void {
    const gauges = QUEUE_GAUGE_VALUES.map(({ definition: d, value }) => ({
      gauge: meter.createObservableGauge(d.name, { unit: d.unit, description: d.description }),
      value,
    }));
    const observables: Observable[] = gauges.map((g) => g.gauge);
    const callback = (result: BatchObservableResult) => {
      for (const observed of this.#observed.values()) {
        for (const { attributes, stats } of observed) {
          for (const { gauge, value } of gauges) result.observe(gauge, value(stats), attributes);
        }
      }
    };
    meter.addBatchObservableCallback(callback, observables);
    return () => meter.removeBatchObservableCallback(callback, observables);
  }

  /** One read of every table; a read still under way when the timer fires again is not doubled. */
  #read(): Promise<void> {
    this.#reading ??= this.#readTables().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  async #readTables(): Promise<void> {
    for (const table of this.#tables) {
      try {
        const stats = await this.#readTable(table);
        this.#observed.set(table, stats.map((s) => ({ attributes: queueAttributes(table, s.name), stats: s })));
        if (this.#failing) this.#logger?.warn('[leasehold] queue metrics: reading the queue figures works again');
        this.#failing = false;
      } catch (error) {
        this.#observed.delete(table);
        if (!this.#failing) this.#logger?.warn(`[leasehold] queue metrics: cannot read ${table.schema}.${table.table}; its gauges are left out until a read succeeds`, { err: toError(error) });
        this.#failing = true;
      }
    }
  }

  /**
   * The figures of every name seen so far. The first read counts every row, finished ones too, so
   * a queue whose rows all finished before this process started has its series from the start.
   */
  async #readTable(table: LeasedTable<unknown>): Promise<LiveQueueStats[]> {
    const names = this.#names.get(table);
    if (names === undefined) {
      const stats = await leaseQueueStats(this.#pool, table);
      this.#names.set(table, new Set(stats.map((s) => s.name)));
      return stats;
    }
    const stats = await leaseLiveQueueStats(this.#pool, table);
    for (const s of stats) names.add(s.name);
    const live = new Set(stats.map((s) => s.name));
    return [...stats, ...[...names].filter((name) => !live.has(name)).map(emptyQueue)];
  }
}

function emptyQueue(name: string): LiveQueueStats {
  return { name, pending: 0, blocked: 0, processing: 0, dead: 0, oldestPendingAgeMs: null, expiredLeases: 0 };
}
