// Issue 15: `leasehold stats --format prometheus` prints the queue gauges as OpenTelemetry's
// Prometheus exporter serves them from createQueueMetrics, for scraping without a running process.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createQueueMetrics, METRICS, taskTable } from '@leasehold/core';
import { createOutbox, outboxTable } from '@leasehold/outbox';
import { insertTasks, useTestDatabase } from '../fixtures.js';
import { cliEnv, runCli } from '../cli/run-cli.js';

const t = useTestDatabase();
const GAUGES = METRICS.filter((m) => m.instrument === 'gauge');

/** The series lines of `text` for the queue gauges, without the exporter's scope label. */
function gaugeSeries(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => GAUGES.some((g) => line.startsWith(`${g.prometheus}{`)))
    .map((line) => line.replace(/,otel_scope_name="[^"]*"/, ''))
    .sort();
}

describe('leasehold stats --format prometheus', () => {
  it('prints each queue gauge of both tables with help and type, the figures of stats, the exporter\'s names and labels', async () => {
    await insertTasks(t.db, 2, { name: 'email' });
    await insertTasks(t.db, 1, { name: 'email', status: 'processing', attempts: 1 });
    await insertTasks(t.db, 3, { name: 'resize', status: 'dead', attempts: 3 });
    await insertTasks(t.db, 1, { name: 'say "hi"\\now' }); // a name that needs escaping in a label
    await sql`UPDATE leasehold.task SET available_at = now() - interval '90 seconds' WHERE name = 'email' AND status = 'pending'`.execute(t.db);
    await createOutbox().add(t.pool, { aggregateType: 'order', aggregateId: 1, eventType: 'OrderPlaced', payload: {} });

    const result = await runCli(['stats', '--format', 'prometheus'], cliEnv({ DATABASE_URL: t.url }));
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    for (const g of GAUGES) {
      expect(lines).toContain(`# HELP ${g.prometheus} ${g.description}`);
      expect(lines).toContain(`# TYPE ${g.prometheus} gauge`);
    }
    const label = (queue: string, table = 'leasehold.task') =>
      `{messaging_system="leasehold",messaging_destination_name="${queue}",leasehold_table="${table}"}`;
    expect(lines).toContain(`leasehold_queue_pending${label('email')} 2`);
    expect(lines).toContain(`leasehold_queue_processing${label('email')} 1`);
    expect(lines).toContain(`leasehold_queue_dead${label('resize')} 3`);
    expect(lines).toContain(`leasehold_queue_pending${label('OrderPlaced', 'leasehold.outbox')} 1`);
    expect(lines).toContain(`leasehold_queue_pending${label('say \\"hi\\"\\\\now')} 1`);
    const age = Number(lines.find((l) => l.startsWith(`leasehold_queue_oldest_pending_age${label('email')}`))!.split(' ').at(-1));
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(600);

    // the same series as the exporter serves from createQueueMetrics (ages aside: time passes)
    const exporter = new PrometheusExporter({ preventServerStart: true });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
    const queues = createQueueMetrics({ pool: t.pool, tables: [taskTable(), outboxTable()], interval: '1h' });
    await queues.start();
    const server: Server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const scraped = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
      const withoutAges = (series: string[]) => series.filter((s) => !s.startsWith('leasehold_queue_oldest_pending_age'));
      expect(withoutAges(gaugeSeries(result.stdout))).toEqual(withoutAges(gaugeSeries(scraped)));
      expect(gaugeSeries(result.stdout).length).toBe(gaugeSeries(scraped).length);
    } finally {
      queues.stop();
      server.close();
    }
  });

  it('refuses an unknown format, and --format with --json (exit code 2)', async () => {
    const env = cliEnv({ DATABASE_URL: t.url });
    const unknown = await runCli(['stats', '--format', 'xml'], env);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('--format must be one of text, prometheus, got "xml"')]);
    const both = await runCli(['stats', '--format', 'prometheus', '--json'], env);
    expect([both.code, both.stderr]).toEqual([2, expect.stringContaining('give either --json or --format, not both')]);
    const elsewhere = await runCli(['dead', 'list', '--format', 'prometheus'], env);
    expect(elsewhere.code).toBe(2);
  });
});
