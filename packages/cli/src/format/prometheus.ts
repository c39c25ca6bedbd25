import { QUEUE_GAUGE_VALUES, queueAttributes } from '@leasehold/core/internal';
import type { StatsReport } from '../commands/stats.js';

/**
 * The queue gauges of a stats report in Prometheus' text format (0.0.4), named and labelled as
 * OpenTelemetry's Prometheus exporter names the `leasehold.queue.*` gauges of
 * `createQueueMetrics`, so one dashboard reads either source.
 */
export function renderPrometheus(report: StatsReport): string {
  const lines: string[] = [];
  for (const { definition, value } of QUEUE_GAUGE_VALUES) {
    lines.push(`# HELP ${definition.prometheus} ${escapeHelp(definition.description)}`, `# TYPE ${definition.prometheus} gauge`);
    for (const { table, queues } of report.tables) {
      for (const q of queues) {
        const attributes = queueAttributes({ schema: report.schema, table }, q.name);
        const labels = Object.entries(attributes).map(([k, v]) => `${k.replace(/[^a-zA-Z0-9_]/g, '_')}="${escapeLabel(v)}"`);
        lines.push(`${definition.prometheus}{${labels.join(',')}} ${value(q)}`);
      }
    }
  }
  return lines.join('\n');
}

function escapeHelp(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
}

function escapeLabel(text: string): string {
  return escapeHelp(text).replaceAll('"', '\\"');
}
