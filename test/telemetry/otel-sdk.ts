// An OpenTelemetry SDK for the telemetry tests: spans and metrics into memory, W3C propagation,
// async context. Each test file runs in its own worker, so registering globals is per file.
import { context, metrics, propagation, trace, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** Registers the SDK's tracing for this test file and returns its exporter. */
export function registerTracing(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return exporter;
}

/** The metrics of one collection, by instrument name. */
export interface Collected {
  /** The instrument's data, or undefined when it recorded nothing. */
  metric(name: string): MetricData | undefined;
  /** The value of a counter or gauge series whose attributes include `attributes` (0 when absent). */
  value(name: string, attributes: Attributes): number;
  /** The count of observations of a histogram series whose attributes include `attributes` (0 when absent). */
  count(name: string, attributes: Attributes): number;
  /** The sum of the observations of a histogram series (0 when absent). */
  sum(name: string, attributes: Attributes): number;
}

/** Registers the SDK's metrics for this test file: `collect()` exports into memory now and reads it. */
export function registerMetrics(): { collect(): Promise<Collected> } {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // exports only when the test asks (forceFlush)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  return {
    async collect() {
      exporter.reset();
      await reader.forceFlush();
      const all = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
      const metric = (name: string) => all.find((m) => m.descriptor.name === name);
      const point = (name: string, attributes: Attributes) =>
        (metric(name)?.dataPoints as DataPoint<unknown>[] | undefined)?.find((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
      return {
        metric,
        value: (name, attributes) => (point(name, attributes)?.value as number | undefined) ?? 0,
        count: (name, attributes) => (point(name, attributes)?.value as Histogram | undefined)?.count ?? 0,
        sum: (name, attributes) => (point(name, attributes)?.value as Histogram | undefined)?.sum ?? 0,
      };
    },
  };
}

/** A span's parent span id, whichever SDK field holds it. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
