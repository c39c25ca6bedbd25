// Child script of the pinned-horizon workload (forked by pinned-horizon.ts with the flags of every
// bench child): one process per role, for leasehold or for graphile-worker.
//
//   pinned-horizon-child.ts <role> '<json PinnedChildOptions>'
//
// - producer: an open-loop producer. Task i is issued at t0 + i/rate (scheduled by target time,
//   not by sleeping a fixed gap, so a slow enqueue does not lower the rate), one enqueue each in
//   its own transaction, several in flight at once on a pool; every 250 ms it sends the tasks
//   committed since, as [i, issued, committed] (process.hrtime, comparable across processes).
// - worker: one consumer at the system's defaults, reporting each handler start as { i, t }.
//   leasehold's is the bench's usual worker (child-worker.ts); graphile-worker's is the peer
//   harness's driver (drivers/graphile-worker.mjs in BENCH_PEERS_DIR), imported by absolute path.
// - reset: graphile-worker's schema dropped and migrated again (the driver's reset).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { enqueue } from '@leasehold/core';
import { noop } from '../lib/bench-task.js';
import { createPool } from '../lib/child-options.js';
import { startWorker } from '../lib/child-worker.js';

export type PinnedSystem = 'leasehold' | 'graphile-worker';

export interface PinnedChildOptions {
  readonly system: PinnedSystem;
  readonly url: string;
  /** leasehold's schema. */
  readonly schema: string;
  /** graphile-worker: the peer harness copy with node_modules. */
  readonly peersDir?: string;
  /** producer: tasks per second. */
  readonly rate?: number;
  /** producer: connections of its pool, so enqueues can overlap when one is slow. */
  readonly poolSize?: number;
  /** worker: concurrency. */
  readonly concurrency?: number;
}

/** What this script uses of a peer harness driver (see /work/shared/bench-peers/README.md). */
interface PeerDriver {
  reset(env: { connectionString: string }): Promise<void>;
  producer(
    env: { connectionString: string },
    o: { poolSize: number },
  ): Promise<{ enqueueOne(payload: { i: number }): Promise<unknown>; close(): Promise<void> }>;
  consumer(
    env: { connectionString: string },
    o: { concurrency: number; handler: (payload: { i: number }) => Promise<void> },
  ): Promise<{ start(): Promise<void>; stop(): Promise<void> }>;
}

const now = () => process.hrtime.bigint();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const send = (message: Record<string, unknown>) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

const [, , role = '', json = '{}'] = process.argv;
const options = JSON.parse(json) as PinnedChildOptions;

async function peerDriver(): Promise<PeerDriver> {
  if (!options.peersDir) throw new Error('graphile-worker needs peersDir (BENCH_PEERS_DIR)');
  const url = pathToFileURL(join(options.peersDir, 'drivers', 'graphile-worker.mjs')).href;
  return ((await import(url)) as { default: PeerDriver }).default;
}

/** The next message of `type` from the runner. */
function message(type: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const on = (m: { type: string } & Record<string, unknown>) => {
      if (m.type !== type) return;
      process.off('message', on);
      resolve(m);
    };
    process.on('message', on);
  });
}

async function producer(): Promise<void> {
  const rate = options.rate ?? 400;
  const poolSize = options.poolSize ?? 8;
  let one: (i: number) => Promise<unknown>;
  let close: () => Promise<void>;
  if (options.system === 'leasehold') {
    const pool = createPool(options, poolSize);
    one = (i) => enqueue(pool, noop, { i }, { schema: options.schema });
    close = () => pool.end();
  } else {
    const p = await (await peerDriver()).producer({ connectionString: options.url }, { poolSize });
    one = (i) => p.enqueueOne({ i });
    close = () => p.close();
  }
  // open the pool's connections and warm the path; these tasks (negative i) are not measured
  await Promise.all(Array.from({ length: poolSize }, (_, k) => one(-1 - k)));

  const go = message('go');
  const stop = message('stop');
  let stopping = false;
  void stop.then(() => void (stopping = true));
  await send({ type: 'ready' });
  await go;

  let batch: bigint[] = []; // i, issued, committed, flattened
  const flush = () => {
    if (batch.length === 0) return Promise.resolve();
    const items = batch;
    batch = [];
    return send({ type: 'commits', items });
  };
  const flusher = setInterval(() => void flush(), 250);
  // at most poolSize enqueues in flight: when they are slow, due tasks wait here (and the lag
  // behind schedule shows it) rather than in an unbounded queue a stop would have to drain
  const inflight = new Set<Promise<void>>();
  let failure: unknown;
  let wake = () => {};
  const intervalNs = BigInt(Math.round(1e9 / rate));
  const t0 = now();
  let i = 0;
  let maxLagNs = 0n;
  while (!stopping && failure === undefined) {
    const t = now();
    for (let target = t0 + BigInt(i) * intervalNs; target <= t && inflight.size < poolSize; target = t0 + BigInt(i) * intervalNs) {
      if (t - target > maxLagNs) maxLagNs = t - target;
      const k = i++;
      const issued = now();
      const p: Promise<void> = one(k).then(
        () => void batch.push(BigInt(k), issued, now()),
        (e: unknown) => void (failure ??= e),
      );
      inflight.add(p);
      void p.finally(() => {
        inflight.delete(p);
        wake();
      });
    }
    // wake at the next task's target time (timers fire late by up to a millisecond or two), or
    // when an enqueue in flight ends while all are busy
    const waitMs = inflight.size >= poolSize ? 1000 : Math.max(1, Math.ceil(Number(t0 + BigInt(i) * intervalNs - now()) / 1e6));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = () => {};
  }
  await Promise.all(inflight);
  clearInterval(flusher);
  await flush();
  if (failure !== undefined) throw failure;
  await send({ type: 'stopped', issued: i, maxLagMs: Number(maxLagNs) / 1e6 });
  await close();
}

async function gwWorker(): Promise<void> {
  const driver = await peerDriver();
  let handled = 0;
  const consumer = await driver.consumer(
    { connectionString: options.url },
    {
      concurrency: options.concurrency ?? 8,
      handler: async ({ i }) => {
        process.send!({ type: 'start', i, t: now() });
        handled++;
      },
    },
  );
  process.on('message', (m: { type: string }) => {
    const on = async () => {
      if (m.type === 'go') {
        await consumer.start();
        await send({ type: 'started' });
      } else if (m.type === 'stop') {
        await consumer.stop();
        await send({ type: 'stopped', handled });
        process.exit(0);
      }
    };
    on().catch((e: unknown) => void fail(e));
  });
  await send({ type: 'ready' });
}

async function main(): Promise<void> {
  switch (role) {
    case 'producer':
      return producer();
    case 'worker':
      if (options.system === 'leasehold') return startWorker({ url: options.url, schema: options.schema, concurrency: options.concurrency ?? 8, reportStarts: true }, send);
      return gwWorker();
    case 'reset':
      await (await peerDriver()).reset({ connectionString: options.url });
      return send({ type: 'result' });
    default:
      throw new Error(`unknown role ${role}`);
  }
}

async function fail(error: unknown): Promise<void> {
  const text = error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
  try {
    await send({ type: 'error', message: text });
  } finally {
    process.exit(1);
  }
}

process.on('unhandledRejection', (e) => void fail(e));
// the runner went away (Ctrl-C, a crash): do not linger holding connections
process.on('disconnect', () => process.exit(1));
main().then(
  async () => {
    if (role === 'worker') return;
    await sleep(0);
    process.exit(0);
  },
  (e: unknown) => void fail(e),
);
