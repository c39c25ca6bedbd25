import type { Context, Span, SpanOptions, Tracer } from '@opentelemetry/api';
import type { LeasedTable } from '../leased-table.js';
import { COUNT_INDEX, taskInstruments, type TaskInstruments, type TaskSeries } from '../metrics/task-instruments.js';
import type { CountedOutcome } from '../metrics/metric-definitions.js';
import type { Outcome } from '../outcome.js';
import type { Claimed } from '../sql/lease-row.js';
import type { TaskStatus } from '../task-status.js';
import type { Transition } from '../transition.js';
import { ATTR, MESSAGING_SYSTEM } from './attributes.js';
import { otel, otelProviderRegistered, type Otel } from './otel-api.js';

/** How a worker's spans and metrics name its rows (see docs/observability.md). */
export interface TelemetryNaming<Row> {
  /** The span name's verb and `messaging.operation.name`: `process` for tasks, `dispatch` for the outbox. */
  readonly operation: string;
  /** `messaging.destination.name`: the row's task name or event type. */
  readonly destination: (row: Claimed<Row>) => string;
  /** Where the producer's W3C trace context (`traceparent`, `tracestate`) is stored, if anywhere. */
  readonly carrier?: (row: Claimed<Row>) => object | null | undefined;
  /**
   * When the row became claimable, in epoch ms by the database's clock; queue wait is not
   * recorded without it.
   */
  readonly availableAtMs?: (row: Claimed<Row>) => number | undefined;
}

/**
 * What became of an attempt, as its span says: a counted outcome; or, uncounted, released by a
 * stopping worker, parked by its workflow (`suspended`) or cancelled.
 */
export type SettledAs = CountedOutcome | 'released' | 'suspended' | 'cancelled';

const CLAIMED = COUNT_INDEX.claimed;

/** What a worker's {@link TaskTelemetry}s share. */
interface Shared<Row> {
  readonly api: Otel;
  readonly tracer: Tracer | undefined;
  readonly metrics: TaskInstruments | undefined;
  /** `messaging.destination.name`'s table, schema-qualified. */
  readonly table: string;
  readonly naming: TelemetryNaming<Row>;
}

/** What a worker's tasks of one destination share: made once, not per task. */
interface Destination {
  readonly name: string;
  readonly series: TaskSeries | undefined;
  readonly spanName: string;
  /** The span's kind and the attributes every span of this destination carries. */
  readonly spanOptions: SpanOptions;
}

/**
 * A worker's OpenTelemetry instrumentation. Made at `start()` only when the application has
 * registered an SDK (a tracer or a meter provider): without one the worker holds none, and a task
 * costs one check. Register the SDK before starting workers.
 * @internal
 */
export class WorkerTelemetry<Row> {
  readonly #shared: Shared<Row>;
  /** By destination (this worker's table): one lookup per task. */
  readonly #destinations = new Map<string, Destination>();

  constructor(shared: Shared<Row>) {
    this.#shared = shared;
  }

  /** The worker's instrumentation, or undefined without the API or without an SDK. */
  static async load<Row>(table: LeasedTable<Row>, naming: TelemetryNaming<Row>): Promise<WorkerTelemetry<Row> | undefined> {
    if (!otelProviderRegistered()) return undefined;
    const api = await otel();
    if (api === null) return undefined;
    const tracer = tracerRegistered(api) ? api.trace.getTracer('leasehold') : undefined;
    const meter = api.metrics.getMeter('leasehold');
    // without a registered MeterProvider the API hands out its one no-op meter
    const metrics = meter === api.createNoopMeter() ? undefined : taskInstruments(meter);
    if (tracer === undefined && metrics === undefined) return undefined;
    return new WorkerTelemetry({ api, tracer, metrics, table: `${table.schema}.${table.table}`, naming });
  }

  /**
   * A claim handed `task` to the worker at `acceptedAt` (performance.now(): one reading for the
   * claim's rows, not one per row): counts it, and starts its telemetry.
   */
  claimed(task: Claimed<Row>, acceptedAt: number): TaskTelemetry<Row> {
    const name = this.#shared.naming.destination(task);
    let destination = this.#destinations.get(name);
    if (destination === undefined) this.#destinations.set(name, (destination = this.#destination(name)));
    if (destination.series !== undefined) destination.series.counts[CLAIMED]!++;
    return new TaskTelemetry(this.#shared, task, destination, acceptedAt);
  }

  #destination(name: string): Destination {
    const { api, metrics, naming, table } = this.#shared;
    const attributes = Object.freeze({
      [ATTR.system]: MESSAGING_SYSTEM,
      [ATTR.operationName]: naming.operation,
      [ATTR.operationType]: 'process',
      [ATTR.destination]: name,
      [ATTR.table]: table,
    });
    return {
      name,
      series: metrics?.series(table, name),
      spanName: `${naming.operation} ${name}`,
      spanOptions: Object.freeze({ kind: api.SpanKind.CONSUMER, attributes }),
    };
  }
}

/** One claimed task's span and figures, from its claim to its outcome. @internal */
export class TaskTelemetry<Row> {
  readonly #w: Shared<Row>;
  readonly #task: Claimed<Row>;
  readonly #destination: Destination;
  readonly #acceptedAt: number;
  #span: Span | undefined;
  #context: Context | undefined;
  #settled = false;

  constructor(w: Shared<Row>, task: Claimed<Row>, destination: Destination, acceptedAt: number) {
    this.#w = w;
    this.#task = task;
    this.#destination = destination;
    this.#acceptedAt = acceptedAt;
  }

  /**
   * The handler starts now (`startedAt`, performance.now()): records the queue wait and opens the
   * consumer span, a child of the producer's stored trace context. `leaseMs`: the lease the claim
   * took, which dates the claim by the database's clock.
   */
  start(startedAt: number, leaseMs: number): void {
    const w = this.#w;
    const series = this.#destination.series;
    if (series !== undefined) {
      const availableAt = w.naming.availableAtMs?.(this.#task);
      if (availableAt !== undefined) {
        // by the database's clock up to the claim, then this process's monotonic clock while
        // buffered; a row claimed ahead of its time (negative first term) waited only past it
        const claimedAt = this.#task.leaseUntil.getTime() - leaseMs;
        const waitMs = Math.max(0, claimedAt - availableAt + (startedAt - this.#acceptedAt));
        w.metrics!.wait.record(waitMs / 1000, series.attributes);
      }
    }
    if (w.tracer === undefined) return;
    const api = w.api;
    const carrier = w.naming.carrier?.(this.#task);
    // never the active context: that is whatever was active when the worker started
    const parent = carrier ? api.propagation.extract(api.ROOT_CONTEXT, carrier) : api.ROOT_CONTEXT;
    // the destination's attributes are shared (the SDK copies them); the task's own are set after
    const span = w.tracer.startSpan(this.#destination.spanName, this.#destination.spanOptions, parent);
    span.setAttribute(ATTR.messageId, this.#task.id);
    span.setAttribute(ATTR.attempt, this.#task.attempts);
    this.#span = span;
    this.#context = api.trace.setSpan(parent, span);
  }

  /** Runs the handler with the task's span active, so spans and trace context inside it are its children. */
  run<T>(fn: () => T): T {
    return this.#context === undefined ? fn() : this.#w.api.context.with(this.#context, fn);
  }

  /** The handler returned or threw after `ms`. */
  handled(ms: number): void {
    const series = this.#destination.series;
    if (series !== undefined) this.#w.metrics!.handler.record(ms / 1000, series.attributes);
  }

  /** The fenced write of the attempt's `outcome` won: `status` is what it wrote. */
  written(outcome: Outcome, status: TaskStatus | null, transition: Transition): void {
    if (status === 'done') this.settle('succeeded');
    else if (status === 'dead') this.settle('dead', 'error' in outcome ? outcome.error : new Error(transition.to === 'done' ? 'dead' : (transition.error ?? 'dead')));
    else if (status === 'pending') this.settle(outcome.kind === 'defer' ? 'deferred' : 'retried', 'error' in outcome ? outcome.error : undefined);
    else this.abandon();
  }

  /**
   * The attempt's outcome is written (or lost): counts it and ends the span, failed with `error`
   * for a retry, a dead task or a lost lease. Only the first call counts.
   */
  settle(outcome: SettledAs, error?: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    const series = this.#destination.series;
    if (series !== undefined && outcome !== 'released' && outcome !== 'suspended' && outcome !== 'cancelled') {
      series.counts[COUNT_INDEX[outcome]]!++;
    }
    const span = this.#span;
    if (span === undefined) return;
    this.#release();
    span.setAttribute(ATTR.outcome, outcome);
    if (error !== undefined) {
      span.recordException(error);
      span.setAttribute('error.type', error.name);
      span.setStatus({ code: this.#w.api.SpanStatusCode.ERROR, message: error.message });
    }
    span.end();
  }

  /** Ends the span without an outcome if nothing settled it (the worker failed to write one). */
  abandon(): void {
    if (this.#settled) return;
    this.#settled = true;
    const span = this.#span;
    this.#release();
    span?.end();
  }

  // An ended span is the exporter's: the task's holder may outlive it (a runner's buffer, a
  // write's batch), and a span kept from there survives into the old generation. Kept, spans
  // doubled what each scavenge promoted and cost some 4 µs of CPU per task in collections
  // (bench/otel-ours.ts).
  #release(): void {
    this.#span = undefined;
    this.#context = undefined;
  }
}

// An SDK registers its provider as the delegate of the API's proxy; a fresh proxy's delegate is
// the API's no-op provider, which tells the two apart.
function tracerRegistered(api: Otel): boolean {
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => unknown };
  if (typeof provider.getDelegate !== 'function') return true;
  return provider.getDelegate() !== new api.ProxyTracerProvider().getDelegate();
}
