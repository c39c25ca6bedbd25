import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRICS } from './metric-definitions.js';

/** The rows of the metrics table in docs/observability.md, as written. */
function documented(): string[][] {
  const doc = readFileSync(new URL('../../../../docs/observability.md', import.meta.url), 'utf8');
  const table = doc.split('<!-- metrics-table -->')[1]!.split('<!-- /metrics-table -->')[0]!;
  return table
    .trim()
    .split('\n')
    .slice(2) // header and rule
    .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| |\s\|$/g, '').replaceAll('`', '')));
}

describe('METRICS', () => {
  it('is the table of docs/observability.md, row by row', () => {
    expect(documented()).toEqual(METRICS.map((m) => [m.name, m.instrument, m.unit, m.prometheus, m.description.replaceAll('`', '')]));
  });

  it('names follow OpenTelemetry: lower case, dot-separated namespaces; durations in seconds', () => {
    for (const m of METRICS) {
      expect(m.name).toMatch(/^leasehold(\.[a-z_]+)+$/);
      if (m.instrument === 'histogram') expect(m.unit).toBe('s');
      expect(m.prometheus).toBe(`${m.name.replaceAll('.', '_')}${m.instrument === 'counter' ? '_total' : ''}`);
    }
    expect(new Set(METRICS.map((m) => m.name)).size).toBe(METRICS.length);
  });
});
