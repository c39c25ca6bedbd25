// A worker looks for an OpenTelemetry SDK in start(): without one it never imports the optional
// API (its modules cost some 30 ms of CPU to load at every worker start), and one registered
// after createWorker but before start() instruments it. Each case runs in a process of its own,
// since a test file's process loads the API through enqueue and the SDK helpers.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { defineTask, enqueue } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const task = defineTask<{ n: number }>('otel-probe', { handler: () => {} });

async function runChild(mode: 'none' | 'sdk-before-start'): Promise<{ apiLoaded: boolean; spans: string[] }> {
  const child = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', 'test/telemetry/worker-otel-child.ts', t.url, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  return JSON.parse(out.trim()) as { apiLoaded: boolean; spans: string[] };
}

describe('a worker and the OpenTelemetry API', () => {
  it('without an SDK registered, runs its tasks and their workflow steps without loading the API', async () => {
    await enqueue(t.pool, task, { n: 1 });
    expect(await runChild('none')).toEqual({ apiLoaded: false, spans: [] });
  });

  it('with an SDK registered after createWorker and before start(), traces its tasks', async () => {
    await enqueue(t.pool, task, { n: 2 });
    const seen = await runChild('sdk-before-start');
    expect(seen.apiLoaded).toBe(true);
    expect(seen.spans).toEqual(['step probe', 'process otel-probe']);
  });
});
