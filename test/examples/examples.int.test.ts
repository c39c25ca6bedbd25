import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { envWith, finished, printed, privateTmpdir, processesMentioning, runProgram, serverLeftovers, startProgram } from './processes.js';

const t = useTestDatabase();

// Each example is a program a user runs; it checks its own outcome and says so in its exit code.
describe('examples run to a successful end', () => {
  it.each([
    ['typed job queue: heartbeat, checkpoint, follow-up task', 'examples/src/typed-jobs/main.ts'],
    ['enqueue from an HTTP handler inside the app transaction', 'examples/src/http-enqueue/main.ts'],
    ['order saga workflow: exactly-once reservation, idempotent charge, approval signal, child task, compensation', 'examples/src/order-saga/main.ts'],
    ['outbox → JetStream → another service through its inbox (NATS_URL, default the machine\'s nats-server)', 'examples/src/outbox-nats/main.ts'],
  ])('%s', async (_name, file) => {
    const result = await runProgram(file, envWith(t.url));
    expect(result.stdout).toContain('OK:');
    expect(result.code, result.stderr).toBe(0);
  });

  // The README's Quick Start (embedded there verbatim): a worker or dispatcher that runs until
  // the platform stops it. scripts/consumer-test.ts runs the same files from the packed packages.
  it.each([
    ['the Quick Start: a task enqueued with the user, then run', 'examples/src/quick-start/tasks.ts', /sending the welcome mail to ada@example\.com/],
    ['the Quick Start: an outbox event recorded with the order, then published', 'examples/src/quick-start/outbox.ts', /publishing OrderPlaced for order \d+/],
  ])('%s; SIGTERM stops it with exit code 0', async (_name, file, done) => {
    const child = startProgram(file, envWith(t.url));
    await printed(child, done);
    child.kill('SIGTERM');
    const result = await finished(child);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
  });

  it('the demo (DATABASE_URL): every event applied exactly once despite a 503 outage and a SIGKILLed worker', async () => {
    const result = await runProgram('examples/src/demo/main.ts', envWith(t.url));
    expect(result.stdout).toContain('OK: every event was applied exactly once.');
    expect(result.stdout).toMatch(/w4 was SIGKILLed at [\d.]+ s, after the receiver applied event \d+/);
    expect(result.stdout).toMatch(/duplicates absorbed\s+[1-9]/);
    expect(result.stdout).toMatch(/receiver 503 answers\s+40/);
    expect(result.code, result.stderr).toBe(0);
  });

  it('the demo with a database that does not exist, or a server out of reach: one line that says so, no stack, exit code 1', async () => {
    const missing = new URL(t.url);
    missing.pathname = '/no_such_demo_database';
    const unreachable = new URL(t.url);
    unreachable.hostname = '127.0.0.1';
    unreachable.port = '1';
    for (const [url, words] of [
      [missing, /^demo failed: database "no_such_demo_database" does not exist \[3D000\] \(check DATABASE_URL; without it the demo starts a throwaway PostgreSQL\)$/],
      [unreachable, /^demo failed: connect ECONNREFUSED 127\.0\.0\.1:1 \[ECONNREFUSED\] \(check DATABASE_URL/],
    ] as const) {
      const result = await runProgram('examples/src/demo/main.ts', envWith(url.toString()));
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toMatch(words);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('the demo without DATABASE_URL starts a throwaway PostgreSQL and leaves no process or folder behind', async () => {
    const tmp = privateTmpdir();
    try {
      const result = await runProgram('examples/src/demo/main.ts', envWith(undefined, { TMPDIR: tmp }));
      expect(result.stdout).toContain('DATABASE_URL is not set, starting a throwaway PostgreSQL');
      expect(result.stdout).toContain('OK: every event was applied exactly once.');
      expect(result.stdout).toContain('throwaway PostgreSQL stopped and its folder removed');
      expect(result.code, result.stderr).toBe(0);
      expect(serverLeftovers(tmp)).toEqual([]);
      expect(processesMentioning(tmp)).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('the demo on Ctrl-C mid-run stops, removes its throwaway PostgreSQL and exits 130', async () => {
    const tmp = privateTmpdir();
    try {
      const child = startProgram('examples/src/demo/main.ts', envWith(undefined, { TMPDIR: tmp }), { detached: true });
      await printed(child, /orders [1-9]\d* placed/);
      // Ctrl-C: SIGINT to the whole process group — the demo, its child worker and PostgreSQL
      process.kill(-child.pid!, 'SIGINT');
      const result = await finished(child);
      expect(result.code, result.stderr).toBe(130);
      expect(result.stdout).toContain('throwaway PostgreSQL stopped and its folder removed');
      expect(serverLeftovers(tmp)).toEqual([]);
      expect(processesMentioning(tmp)).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
