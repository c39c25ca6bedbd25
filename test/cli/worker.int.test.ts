// `leasehold worker --tasks`: runs the task definitions and schedules that modules export, stops
// gracefully on SIGTERM (running tasks finish, exit 0), and refuses what it cannot run in words.
import { sql } from 'kysely';
import type pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineTask, enqueue, getTask, type TaskStatus } from '@leasehold/core';
import { useTestDatabase, waitForLockWaiters } from '../fixtures.js';
import { cliEnv, exited, outputContains, runCli, startCli } from './run-cli.js';

const t = useTestDatabase();
let env: NodeJS.ProcessEnv;
beforeAll(() => void (env = cliEnv({ DATABASE_URL: t.url })));

const FIXTURES = 'test/cli/worker-fixtures';
// the same names as the fixtures' tasks: what enqueue needs (the worker runs the fixtures' handlers)
const email = defineTask<{ to: string }>('cli-email', { handler: () => {} });
const resize = defineTask<{ width: number }>('cli-resize', { handler: () => {} });
const block = defineTask<{ lock: number }>('cli-block', { handler: () => {} });

let started: ReturnType<typeof startCli>[] = [];
afterEach(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started = [];
});

function startWorker(args: readonly string[]): ReturnType<typeof startCli> {
  const child = startCli(['worker', ...args], env);
  started.push(child);
  return child;
}

/** Polls the task until it has `status`; fails after `ms`. */
async function statusBecomes(id: string, status: TaskStatus, schema = 'leasehold', ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const info = await getTask(t.pool, id, { schema });
    if (info?.status === status) return;
    if (Date.now() > deadline) throw new Error(`task ${id} is ${info?.status ?? 'missing'}, not ${status}, after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Holds an advisory lock on a connection of its own: the fixture's cli-block task waits for it. */
async function heldLock(key: number): Promise<{ client: pg.Client; release(): Promise<void> }> {
  const client = await t.client();
  await client.query('SELECT pg_advisory_lock($1)', [key]);
  return { client, release: async () => void (await client.query('SELECT pg_advisory_unlock($1)', [key])) };
}

describe('leasehold worker --tasks', () => {
  it('runs the tasks and schedules a folder of modules exports; on SIGTERM the running task finishes, then exit 0', async () => {
    const child = startWorker(['--tasks', `${FIXTURES}/tasks`, '--poll-interval', '200ms']);
    await outputContains(child, 'leasehold worker: running');
    // .mjs, .ts and .cjs; a schedule's task that no module exports; the test file is not loaded
    expect(child.output.stdout).toContain('running cli-block, cli-email, cli-resize, cli-tick, schedule(s) cli-every-second');

    const mailed = await enqueue(t.pool, email, { to: 'ada@example.com' });
    const resized = await enqueue(t.pool, resize, { width: 100 });
    await statusBecomes(mailed.id, 'done');
    await statusBecomes(resized.id, 'done');
    expect((await getTask(t.pool, mailed.id))!.result).toEqual({ sent: 'ada@example.com' });
    expect((await getTask(t.pool, resized.id))!.result).toEqual({ width: 200 });
    await expect.poll(async () => {
      const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE name = 'cli-tick' AND status = 'done'`.execute(t.db);
      return Number(rows[0]!.n);
    }, { timeout: 15_000, interval: 100 }).toBeGreaterThan(0);

    const lock = await heldLock(4_201);
    const running = await enqueue(t.pool, block, { lock: 4_201 });
    await statusBecomes(running.id, 'processing');
    await waitForLockWaiters(t.db); // its handler is inside, waiting for the lock
    child.kill('SIGTERM');
    await outputContains(child, 'received SIGTERM: stopping; 1 running task(s) may finish within 30s');
    expect((await getTask(t.pool, running.id))!.status).toBe('processing'); // not handed back: it may finish
    await lock.release();

    const result = await exited(child);
    expect(result.code, result.stderr).toBe(0);
    expect((await getTask(t.pool, running.id))!.status).toBe('done');
    expect(result.stdout).toMatch(/leasehold worker: stopped \(\d+ done, 0 retried, 0 dead since it started\)/);
  });

  it('a second signal more than 2 s after the first exits at once with 130, leaving the running task to its lease', async () => {
    const child = startWorker(['--tasks', `${FIXTURES}/tasks/blocking.mjs`, '--shutdown-timeout', '5m']);
    await outputContains(child, 'leasehold worker: running cli-block from');
    const lock = await heldLock(4_202);
    const running = await enqueue(t.pool, block, { lock: 4_202 });
    await waitForLockWaiters(t.db);
    child.kill('SIGTERM');
    await outputContains(child, 'stopping');
    // main.ts ignores repeats within 2 s (one Ctrl-C reaching npx and node); keep signalling until it exits
    const signals = setInterval(() => child.kill('SIGTERM'), 250);
    const result = await exited(child).finally(() => clearInterval(signals));
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('SIGTERM again, exiting now');
    expect((await getTask(t.pool, running.id))!.status).toBe('processing');
    await lock.release();
  });

  it('--migrate migrates a new schema first; --json prints the lifecycle as JSON lines', async () => {
    const unmigrated = await runCli(['worker', '--tasks', `${FIXTURES}/tasks/email.mjs`, '--schema', 'cli_worker_new'], env);
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toContain('schema "cli_worker_new" is not migrated');
    expect(unmigrated.stderr).toContain('run "leasehold migrate" or give --migrate');

    const child = startWorker(['--tasks', `${FIXTURES}/tasks/email.mjs`, '--schema', 'cli_worker_new', '--migrate', '--json']);
    await outputContains(child, '"event":"started"');
    expect(child.output.stderr).toContain('schema "cli_worker_new" migrated: core:1');
    expect(JSON.parse(child.output.stdout.trim())).toMatchObject({ event: 'started', tasks: ['cli-email'], schedules: [], concurrency: 8 });
    const mailed = await enqueue(t.pool, email, { to: 'grace@example.com' }, { schema: 'cli_worker_new' });
    await statusBecomes(mailed.id, 'done', 'cli_worker_new');
    child.kill('SIGTERM');
    const result = await exited(child);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as { event: string });
    expect(lines.map((l) => l.event)).toEqual(['started', 'stopping', 'stopped']);
    expect(lines[2]).toEqual({ event: 'stopped', done: 1, retried: 0, dead: 0, deferred: 0 });
  });

  it('refuses what it cannot run, in words, before connecting', async () => {
    const cases: Array<[args: string[], code: number, message: string]> = [
      [[], 2, 'worker needs --tasks <module or folder>'],
      [['--tasks', `${FIXTURES}/nowhere`], 2, `--tasks: no such file or folder: ${FIXTURES}/nowhere`],
      [['--tasks', `${FIXTURES}/tasks`, '--lease', '10s'], 2, "Unknown option '--lease'"],
      [['--tasks', `${FIXTURES}/tasks`, '--concurrency', '0'], 2, '--concurrency must be a whole number from 1 to 10000'],
      [['--tasks', `${FIXTURES}/tasks`, '--poll-interval', '5'], 2, '--poll-interval needs a unit'],
      [['--tasks', `${FIXTURES}/tasks`, '--no-listen', '--listen-connection-string', t.url], 2, 'give either --no-listen or --listen-connection-string'],
      [['--tasks', `${FIXTURES}/no-tasks.mjs`], 1, `no task definitions in ${FIXTURES}/no-tasks.mjs: export what defineTask() returns`],
      [['--tasks', `${FIXTURES}/duplicate`], 1, `task "cli-dup" is defined twice: in ${FIXTURES}/duplicate/a.mjs (export first) and in ${FIXTURES}/duplicate/b.mjs (export second)`],
      [['--tasks', `${FIXTURES}/broken.mjs`], 1, `cannot load ${FIXTURES}/broken.mjs: Expected \`lease\` to be a finite duration`],
    ];
    // none of them reaches the database: an unreachable one proves it
    const unreachable = cliEnv({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    for (const [args, code, message] of cases) {
      const result = await runCli(['worker', ...args], unreachable);
      expect(result.stderr).toContain(message);
      expect(result.code, result.stderr).toBe(code);
    }
    const elsewhere = await runCli(['stats', '--tasks', `${FIXTURES}/tasks`], env);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain('option --tasks does not apply to "leasehold stats"');
  });
});
