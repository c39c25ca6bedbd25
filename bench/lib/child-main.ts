// Entry point of a bench child process: `child-main.ts <role> '<json options>'`. Each role is
// one measured piece (a worker, a producer) running alone in a fresh Node.js process; it talks
// to the runner over IPC (messages with a `type`).
import { enqueue, enqueueMany } from '@leasehold/core';
import { noop } from './bench-task.js';
import { startDispatcher } from './child-dispatcher.js';
import { startWorker } from './child-worker.js';
import { createPool, type ChildOptions } from './child-options.js';

const now = () => process.hrtime.bigint();
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const send = (message: Record<string, unknown>) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

const [, , role = '', json = '{}'] = process.argv;
const options = JSON.parse(json) as ChildOptions;

/** Waits for the runner's next message of `type`. */
function message(type: string): Promise<void> {
  return new Promise((resolve) => {
    const on = (m: { type: string }) => {
      if (m.type !== type) return;
      process.off('message', on);
      resolve();
    };
    process.on('message', on);
  });
}

/**
 * The timed section of a producer: 'ready' (connections open, code warm) → the runner samples
 * the backends' CPU and says 'go' → `work` → 'result' with this process's CPU → the runner
 * samples again and says 'stop'. Connections stay open until then, so their backends are counted.
 */
async function timed(work: () => Promise<Record<string, unknown>>, close: () => Promise<void>): Promise<void> {
  const go = message('go');
  await send({ type: 'ready' });
  await go;
  const cpu = process.cpuUsage();
  const t0 = now();
  const result = await work();
  const ns = now() - t0;
  const used = process.cpuUsage(cpu);
  const stop = message('stop');
  await send({ type: 'result', ns, cpuMs: (used.user + used.system) / 1000, ...result });
  await stop;
  await close();
}

/** `n` single enqueues, each its own transaction, from `clients` concurrent loops. */
async function enqueueSingle({ n = 0, clients = 8 }: ChildOptions): Promise<void> {
  const pool = createPool(options, clients + 2);
  // steady state, not a cold start: V8 takes a few thousand calls to optimise the enqueue path
  // (the peer harness warms up with 16, the same for every system)
  const warmup = 2000;
  let w = 0;
  await Promise.all(
    range(clients).map(async () => {
      for (let k = w++; k < warmup; k = w++) await enqueue(pool, noop, { i: -1 - k }, { schema: options.schema });
    }),
  );
  let next = 0;
  await timed(
    async () => {
      await Promise.all(
        range(clients).map(async () => {
          for (let i = next++; i < n; i = next++) await enqueue(pool, noop, { i }, { schema: options.schema });
        }),
      );
      return { warmup };
    },
    () => pool.end(),
  );
}

/** `n` tasks through `enqueueMany`, `chunk` per call, calls one after another. */
async function enqueueBulk({ n = 0, chunk = 1000 }: ChildOptions): Promise<void> {
  const pool = createPool(options, 2);
  const warmup = 3 * chunk;
  for (let b = 0; b < 3; b++) {
    await enqueueMany(pool, noop, range(chunk).map((k) => ({ payload: { i: -1 - b * chunk - k } })), { schema: options.schema });
  }
  const batches = range(Math.ceil(n / chunk)).map((b) =>
    range(Math.min(chunk, n - b * chunk)).map((k) => ({ payload: { i: b * chunk + k } })),
  );
  await timed(
    async () => {
      for (const items of batches) await enqueueMany(pool, noop, items, { schema: options.schema });
      return { warmup };
    },
    () => pool.end(),
  );
}

/**
 * Open-loop producer for the latency workload: task i is enqueued at t0 + i/rate whatever the
 * earlier enqueues took; its commit time is when `enqueue` resolved.
 */
async function latencyProducer({ n = 0, rate = 50 }: ChildOptions): Promise<void> {
  const pool = createPool(options, 4);
  await enqueue(pool, noop, { i: -1 }, { schema: options.schema });
  await new Promise((r) => setTimeout(r, 300));
  const intervalNs = BigInt(Math.round(1e9 / rate));
  const commits: bigint[] = new Array<bigint>(n);
  const issued: bigint[] = new Array<bigint>(n);
  const inflight: Promise<void>[] = [];
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const target = t0 + BigInt(i) * intervalNs;
    const waitMs = Number(target - now()) / 1e6;
    if (waitMs > 1) await new Promise((r) => setTimeout(r, Math.floor(waitMs)));
    while (now() < target) {
      // spin the last millisecond: timers are not that precise
    }
    issued[i] = now();
    inflight.push(enqueue(pool, noop, { i }, { schema: options.schema }).then(() => void (commits[i] = now())));
  }
  await Promise.all(inflight);
  await pool.end();
  await send({ type: 'result', commits, issued });
}

async function main(): Promise<void> {
  switch (role) {
    case 'enqueue-single':
      return enqueueSingle(options);
    case 'enqueue-bulk':
      return enqueueBulk(options);
    case 'latency-producer':
      return latencyProducer(options);
    case 'worker':
      return startWorker(options, send);
    case 'dispatcher':
      return startDispatcher(options, send);
    default:
      throw new Error(`unknown role ${role}`);
  }
}

async function fail(error: unknown): Promise<void> {
  const message = error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
  try {
    await send({ type: 'error', message });
  } finally {
    process.exit(1);
  }
}

process.on('unhandledRejection', (e) => void fail(e));
main().then(
  () => {
    if (role !== 'worker' && role !== 'dispatcher') process.exit(0);
  },
  (e: unknown) => void fail(e),
);
