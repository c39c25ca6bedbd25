// The OpenTelemetry SDK a bench worker registers for the `process-otel` workload, as an
// application would in production: async context, W3C propagation, every span sampled and
// exported in batches (into memory), and a metric reader collecting every second.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * Registers the SDK for this process; call before creating the worker. `BENCH_OTEL_PARTS`
 * (`traces`, `metrics`, or `context`: the async context manager alone, no provider) registers only
 * that part, to tell their costs apart.
 */
export function registerBenchOtel(): void {
  const parts = process.env.BENCH_OTEL_PARTS ?? 'traces,metrics';
  if (parts.includes('traces')) registerTraces();
  if (parts.includes('metrics')) registerMetrics();
  if (parts === 'context') context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

function registerTraces(): void {
  const spans = new InMemorySpanExporter();
  // the exporter keeps what it is given: drop it every batch, as a network exporter would
  const exporter = { export: (batch: Parameters<InMemorySpanExporter['export']>[0], done: Parameters<InMemorySpanExporter['export']>[1]) => {
    spans.export(batch, done);
    spans.reset();
  }, shutdown: () => spans.shutdown() };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ sampler: new AlwaysOnSampler(), spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 8192, maxExportBatchSize: 512 })] }),
  );
}

function registerMetrics(): void {
  const reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 1000 });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
}
