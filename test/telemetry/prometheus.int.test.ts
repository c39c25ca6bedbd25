// Issue 15: the Prometheus example serves every documented metric on /metrics, and the docs carry
// its recipe verbatim.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { envWith, finished, printed, startProgram } from '../examples/processes.js';

const t = useTestDatabase();

const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');

/** The Prometheus names in the metrics table of docs/observability.md, with their instrument. */
function documentedMetrics(): { name: string; instrument: string }[] {
  const table = doc.split('<!-- metrics-table -->')[1]!.split('<!-- /metrics-table -->')[0]!;
  return [...table.matchAll(/^\| `[a-z_.]+` \| (\w+) \| [^|]+ \| `(\w+)` \|/gm)].map((m) => ({ instrument: m[1]!, name: m[2]! }));
}

describe('the Prometheus example', () => {
  it('serves each documented metric on /metrics, with the queue gauges and outcome counters the run produced', async () => {
    const child = startProgram('examples/src/prometheus/main.ts', envWith(t.url, { PORT: '0' }));
    try {
      await printed(child, /metrics: (http:\S+)/);
      const url = /metrics: (http:\S+)/.exec(child.output.stdout)![1]!;
      expect(child.output.stdout).toContain('OK: every leasehold metric is on');
      const lines = (await (await fetch(url)).text()).split('\n');
      const series = (name: string) => lines.filter((l) => l.startsWith(`${name}{`));
      const metrics = documentedMetrics();
      expect(metrics.length).toBe(12);
      for (const { name, instrument } of metrics) {
        expect(lines, name).toContain(`# TYPE ${name} ${instrument === 'gauge' ? 'gauge' : instrument === 'counter' ? 'counter' : 'histogram'}`);
        expect(series(instrument === 'histogram' ? `${name}_count` : name).length, name).toBeGreaterThan(0);
      }
      // what the run did, as Prometheus sees it (labels as the exporter writes them)
      const value = (name: string, queue: string) =>
        Number(series(name).find((l) => l.includes(`messaging_destination_name="${queue}"`))?.split(' ').at(-1));
      expect(value('leasehold_task_succeeded_total', 'resize-image')).toBe(20);
      expect(value('leasehold_task_retried_total', 'sync-crm')).toBe(5);
      expect(value('leasehold_task_dead_total', 'charge-card')).toBe(2);
      expect(value('leasehold_task_deferred_total', 'send-digest')).toBe(1);
      expect(value('leasehold_queue_pending', 'rebuild-index')).toBe(3);
      expect(value('leasehold_queue_dead', 'charge-card')).toBe(2);
      expect(value('leasehold_queue_oldest_pending_age', 'rebuild-index')).toBeGreaterThan(0);
    } finally {
      child.kill('SIGTERM');
    }
    const result = await finished(child);
    expect(result.code, result.stderr).toBe(0);
  });

  it('docs/observability.md shows the example\'s recipe as the file has it', () => {
    const file = 'examples/src/prometheus/metrics-endpoint.ts';
    const block = doc.split(`<!-- snippet: ${file} -->\n\`\`\`ts\n`)[1]!.split('```')[0];
    expect(block).toBe(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8'));
  });
});
