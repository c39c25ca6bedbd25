// leasehold's metrics for Prometheus: OpenTelemetry's SDK with its Prometheus exporter, served at
// /metrics by the application's own HTTP server. Register it before workers start: they look for
// a MeterProvider then. Nothing here is leasehold's but the two lines marked.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createQueueMetrics, taskTable, type Executor } from '@leasehold/core';

/** Registers the SDK; returns the `/metrics` handler and the queue gauges to start and stop. */
export function registerPrometheus(pool: Executor, schema: string) {
  // the exporter is a metric reader; preventServerStart: no server of its own, the app's serves it
  const exporter = new PrometheusExporter({ preventServerStart: true });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  // leasehold: workers record counters and histograms by themselves once a MeterProvider is
  // registered; the queue gauges read the task table once per interval, whatever the scrape rate
  const queues = createQueueMetrics({ pool, tables: [taskTable(schema)], interval: '5s' });
  const serveMetrics = (req: IncomingMessage, res: ServerResponse) => exporter.getMetricsRequestHandler(req, res);
  return { serveMetrics, queues };
}
