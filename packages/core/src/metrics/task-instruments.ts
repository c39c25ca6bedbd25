import type { Attributes, Histogram, Meter, ObservableCounter } from '@opentelemetry/api';
import { ATTR, MESSAGING_SYSTEM } from '../telemetry/attributes.js';
import { DURATION_BUCKETS, TASK_COUNTERS, TASK_HISTOGRAMS, type MetricDefinition } from './metric-definitions.js';

/** What {@link TaskSeries.counts} counts, by position. */
export const COUNTED = Object.keys(TASK_COUNTERS) as readonly (keyof typeof TASK_COUNTERS)[];

/** Position of each counter in {@link TaskSeries.counts}. */
export const COUNT_INDEX = Object.fromEntries(COUNTED.map((key, i) => [key, i])) as Readonly<Record<keyof typeof TASK_COUNTERS, number>>;

/** The figures of one task name (or event type) of one table in this process. */
export class TaskSeries {
  /** Totals since the process started, in the order of {@link COUNTED}. */
  readonly counts: number[] = COUNTED.map(() => 0);

  constructor(readonly attributes: Attributes) {}
}

/**
 * A meter's task instruments, shared by every worker of the process that records through it.
 * The counters are asynchronous: workers add to plain numbers per series, and the SDK reads the
 * totals when it collects. A synchronous counter hashes its attributes on every `add` (1–2 µs,
 * twice per task); histograms have no asynchronous form, so they are recorded per task.
 * @internal
 */
export class TaskInstruments {
  readonly wait: Histogram;
  readonly handler: Histogram;
  readonly #series = new Map<string, TaskSeries>();

  constructor(meter: Meter) {
    this.wait = meter.createHistogram(TASK_HISTOGRAMS.wait.name, histogramOptions(TASK_HISTOGRAMS.wait));
    this.handler = meter.createHistogram(TASK_HISTOGRAMS.handler.name, histogramOptions(TASK_HISTOGRAMS.handler));
    const counters: ObservableCounter[] = COUNTED.map((key) => {
      const d: MetricDefinition = TASK_COUNTERS[key];
      return meter.createObservableCounter(d.name, { unit: d.unit, description: d.description });
    });
    meter.addBatchObservableCallback((result) => {
      for (const series of this.#series.values()) {
        for (let i = 0; i < counters.length; i++) result.observe(counters[i]!, series.counts[i]!, series.attributes);
      }
    }, counters);
  }

  /** The series of `destination` in `table` (a schema-qualified name), made on first use. */
  series(table: string, destination: string): TaskSeries {
    const key = `${table}\u0000${destination}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = new TaskSeries(Object.freeze({ [ATTR.system]: MESSAGING_SYSTEM, [ATTR.destination]: destination, [ATTR.table]: table }));
      this.#series.set(key, series);
    }
    return series;
  }
}

function histogramOptions(d: MetricDefinition) {
  return { unit: d.unit, description: d.description, advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] } };
}

// One set of instruments per meter, so that counters stay cumulative across the workers a process
// starts and stops, and two workers never report the same series twice in one collection.
const byMeter = new WeakMap<Meter, TaskInstruments>();

/** The task instruments of `meter`, made on first use. @internal */
export function taskInstruments(meter: Meter): TaskInstruments {
  let instruments = byMeter.get(meter);
  if (instruments === undefined) {
    instruments = new TaskInstruments(meter);
    byMeter.set(meter, instruments);
  }
  return instruments;
}
