import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = dirname(fileURLToPath(import.meta.url));

/** Runtime imports (not `import type`) between core's modules, by file. */
function importGraph(): Map<string, string[]> {
  const files = (readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => join(root, f));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const source = readFileSync(file, 'utf8');
    const targets = [...source.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?\sfrom\s+'(\.[^']+)\.js'/gms)];
    graph.set(file, targets.map((m) => resolve(dirname(file), `${m[1]}.ts`)));
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): void => {
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next].map((f) => relative(root, f)).join(' → '));
      else if (!state.has(next)) visit(next, [...path, next]);
    }
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file, [file]);
  return found;
}

describe('module graph', () => {
  it('has no import cycles (errors.ts needs duration.ts, so the errors every check throws live apart)', () => {
    const graph = importGraph();
    expect(graph.get(join(root, 'errors.ts'))).toContain(join(root, 'duration.ts'));
    expect(cycles(graph)).toEqual([]);
  });
});
