// One real worker process for the fault scenarios (spawned by fleet.ts, killed at will):
//
//   node --conditions=@leasehold/source --import tsx test/faults/worker-process.ts <url> [options]
//
// It runs core's worker over the `fault` tasks of leasehold.task. The handler records its effect
// (task id, lease_version, pid) in fault_effect, then sleeps a few ms. A payload can ask for
// misbehaviour on the first attempt: `stall` blocks the event loop (no heartbeat can run) and
// `slow` outlives the handler time limit while ignoring its AbortSignal. What the worker
// reports is printed as one JSON line per event on stdout; SIGTERM stops it gracefully (exit 0).
// With --standby it loads, prints `ready` and waits for a line on stdin before it starts.
// Nothing else is printed: the parent treats any stderr output or a non-zero exit as a crash.
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createLeaseWorker, taskTable, type Claimed, type TaskRow } from '@leasehold/core';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    app: { type: 'string', default: 'lh-fault' },
    concurrency: { type: 'string', default: '8' },
    lease: { type: 'string', default: '2000' },
    poll: { type: 'string', default: '250' },
    'handler-timeout': { type: 'string' },
    'max-sleep': { type: 'string', default: '5' },
    standby: { type: 'boolean', default: false },
    // LISTEN on a connection of its own named `<app>:listen`, so a test can tell it from the pool's
    'listen-apart': { type: 'boolean', default: false },
  },
});
const url = positionals[0];
if (!url) throw new Error('usage: worker-process.ts <database url> [--app name] [--concurrency n] [--lease ms] [--poll ms]');
const leaseMs = Number(values.lease);
const maxSleepMs = Number(values['max-sleep']);
const handlerTimeoutMs = values['handler-timeout'] === undefined ? undefined : Number(values['handler-timeout']);

/** What a fault task's payload can ask of its first attempt. */
interface FaultPayload {
  /** Block the event loop this long (past the lease: heartbeats starve, the lease expires). */
  stall?: number;
  /** Sleep this long ignoring the AbortSignal (past the handler time limit). */
  slow?: number;
}

function print(event: Record<string, unknown>): void {
  // stdout to a pipe is synchronous on Linux, so a line printed before a SIGKILL is not lost
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...event })}\n`);
}

const pool = new pg.Pool({ connectionString: url, max: Number(values.concurrency) + 3, application_name: values.app });
// the worker reports idle-client errors while it runs; this covers the moments before and after
pool.on('error', (error) => print({ e: 'pool-error', message: error.message }));

async function handle(task: Claimed<TaskRow>): Promise<void> {
  const payload = (task.payload ?? {}) as FaultPayload;
  if (payload.stall && task.attempts === 1) {
    const until = performance.now() + payload.stall;
    while (performance.now() < until) {
      // a handler stuck in synchronous work: nothing else in this process runs meanwhile
    }
  }
  if (payload.slow && task.attempts === 1) await sleep(payload.slow); // deaf to ctx.signal
  await pool.query('INSERT INTO fault_effect (task_id, lease_version, pid) VALUES ($1, $2, $3)', [
    task.id,
    task.leaseVersion,
    process.pid,
  ]);
  await sleep(Math.random() * maxSleepMs);
}

const worker = createLeaseWorker<TaskRow>({
  pool,
  table: taskTable(),
  names: ['fault'],
  owner: `${values.app}:${process.pid}`,
  concurrency: Number(values.concurrency),
  lease: leaseMs,
  pollInterval: Number(values.poll),
  handlerTimeout: handlerTimeoutMs,
  backoff: { base: 50, cap: 500 },
  listenConnectionString: values['listen-apart'] ? withApplicationName(url, `${values.app}:listen`) : undefined,
  // the worker's log lines become events too: stderr is kept for crashes
  logger: {
    warn: (message, meta) => print({ e: 'log', level: 'warn', message, ...logMeta(meta) }),
    error: (message) => print({ e: 'log', level: 'error', message }),
  },
  handle,
});

function withApplicationName(connectionString: string, name: string): string {
  const u = new URL(connectionString);
  u.searchParams.set('application_name', name);
  return u.toString();
}

function logMeta(meta: object | undefined): { id?: string; v?: number } {
  const m = (meta ?? {}) as { id?: unknown; leaseVersion?: unknown };
  return { id: typeof m.id === 'string' ? m.id : undefined, v: typeof m.leaseVersion === 'number' ? m.leaseVersion : undefined };
}
worker.on('task:succeeded', ({ task }) => print({ e: 'ok', id: task.id, v: task.leaseVersion }));
worker.on('task:lease-lost', ({ task, error }) =>
  // the finalize path says "finalize refused"; the heartbeat path found the token moved on
  print({ e: 'lost', id: task.id, v: task.leaseVersion, via: error.message.startsWith('finalize refused') ? 'finalize' : 'heartbeat' }),
);
worker.on('task:retrying', ({ task, error }) => print({ e: 'retry', id: task.id, v: task.leaseVersion, message: error.message }));
worker.on('task:dead', ({ task, error }) => print({ e: 'dead', id: task.id, v: task.leaseVersion, message: error.message }));
worker.on('worker:error', ({ error }) => print({ e: 'error', message: error.message }));
worker.on('heartbeat:failed', ({ error }) => print({ e: 'heartbeat-failed', message: error.message }));

process.once('SIGTERM', () => {
  void (async () => {
    await worker.stop({ timeout: '5s' });
    await pool.end();
    print({ e: 'stopped' });
    process.exit(0);
  })();
});

if (values.standby) {
  // a warm spare: loaded and connected-ready, it starts claiming when the parent writes a line
  // to its stdin, so a replacement takes over in milliseconds instead of a process boot
  print({ e: 'ready' });
  await once(createInterface({ input: process.stdin }), 'line');
}
await worker.start();
print({ e: 'started' });
