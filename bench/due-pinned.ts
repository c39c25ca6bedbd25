// What a long transaction elsewhere (the MVCC horizon held) does to work that reaches the claim by
// its due time: workflow runs that sleep (`task_waiting`) or tasks that retry (`task_due`), started
// at a steady rate into two workers (one process, library defaults). After a while without, another
// session holds a REPEATABLE READ snapshot. Prints, per 10 s, the wakes (or retries), how late they
// started against their due time (p50 / p99 / max, ms) and the index entries each scan of the
// claim's indexes read, as the server counts them (pg_stat_user_indexes; sessions report at most
// once a second, so each row lags by up to that). A measurement, not a test: it asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/due-pinned.ts
//   DUE_PINNED_MODE: sleep (default) or retry; DUE_PINNED_RATE: runs or tasks started per second
//   (default 200); DUE_PINNED_DELAY_MS: the sleep or the retry's delay (default 500);
//   DUE_PINNED_FREE_S, DUE_PINNED_HELD_S: seconds without and with the snapshot held (default 20, 120)
// Works in a schema of its own (due_pinned_<pid>) in that database, dropped at the end.
import pg from 'pg';
import { holdSnapshot, releaseSnapshot } from '../test/hold-snapshot.js';
import { indexReads } from './lib/index-reads.js';
import { createWorker, defineTask, enqueueMany, migrate, RetryableError } from '@leasehold/core';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MODE = process.env.DUE_PINNED_MODE ?? 'sleep';
if (MODE !== 'sleep' && MODE !== 'retry') throw new Error('DUE_PINNED_MODE must be sleep or retry');
const RATE = Number(process.env.DUE_PINNED_RATE ?? 200);
const DELAY_MS = Number(process.env.DUE_PINNED_DELAY_MS ?? 500);
const FREE_S = Number(process.env.DUE_PINNED_FREE_S ?? 20);
const HELD_S = Number(process.env.DUE_PINNED_HELD_S ?? 120);
const SCHEMA = `due_pinned_${process.pid}`;
const INDEXES = ['task_claim', 'task_due', 'task_waiting'];
const wallNow = () => performance.timeOrigin + performance.now();

let late: number[] = [];
const sleeper = defineTask<{ i: number }>('due-pinned-sleep', {
  handler: async (_, ctx) => {
    // the call's time as the run recorded it: the sleep counts from its call
    const calledAt = await ctx.step('called', async () => wallNow());
    await ctx.sleep('nap', DELAY_MS);
    await ctx.step('woke', async () => {
      late.push(wallNow() - calledAt - DELAY_MS);
    });
  },
});
const failedAt = new Map<number, number>();
const retrier = defineTask<{ i: number }>('due-pinned-retry', {
  backoff: { base: 1, cap: 1 },
  handler: ({ i }, ctx) => {
    const now = wallNow();
    if (ctx.task.attempts <= 1) {
      failedAt.set(i, now);
      throw new RetryableError('fails once', { retryAfterMs: DELAY_MS });
    }
    const at = failedAt.get(i);
    if (at !== undefined) late.push(now - at - DELAY_MS);
    failedAt.delete(i);
  },
});
const task = MODE === 'sleep' ? sleeper : retrier;

function quantile(xs: readonly number[], q: number): string {
  if (xs.length === 0) return '—';
  const sorted = [...xs].sort((a, b) => a - b);
  return String(Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!));
}

const admin = new pg.Pool({ connectionString: url, max: 3 });
await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
await migrate(admin, { schema: SCHEMA });
const pool = new pg.Pool({ connectionString: url, max: 12 });
const workers = [0, 1].map(() => createWorker({ pool, tasks: [task], schema: SCHEMA, logger: null }));
await Promise.all(workers.map((w) => w.start()));

// open loop: RATE starts a second, whatever the workers do
let produced = 0;
let producing = true;
const t0 = performance.now();
const producer = (async () => {
  while (producing) {
    const due = Math.floor(((performance.now() - t0) / 1000) * RATE);
    if (due > produced) {
      const n = due - produced;
      await enqueueMany(admin, task, Array.from({ length: n }, (_, k) => ({ payload: { i: produced + k } })), { schema: SCHEMA });
      produced += n;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
})();

console.log(`${MODE}: ${RATE} a second, ${DELAY_MS} ms each, two workers at the library defaults; snapshot held from ${FREE_S} s for ${HELD_S} s`);
console.log(`| s | held | started | late p50 / p99 / max (ms) | ${INDEXES.map((n) => `${n} entries per scan (scans)`).join(' | ')} |`);
console.log(`|---:|---|---:|---|${INDEXES.map(() => '---:').join('|')}|`);
let holder: pg.Client | undefined;
let before = await indexReads(admin, SCHEMA);
for (let s = 10; s <= FREE_S + HELD_S; s += 10) {
  await new Promise((r) => setTimeout(r, t0 + s * 1000 - performance.now()));
  const window = late;
  late = [];
  const now = await indexReads(admin, SCHEMA);
  const reads = INDEXES.map((name) => {
    const [a, b] = [now.get(name), before.get(name)];
    const scans = (a?.scans ?? 0) - (b?.scans ?? 0);
    return scans === 0 ? '—' : `${Math.round(((a?.entries ?? 0) - (b?.entries ?? 0)) / scans).toLocaleString('en-US')} (${scans.toLocaleString('en-US')})`;
  });
  before = now;
  console.log(`| ${s} | ${holder ? 'yes' : '—'} | ${window.length} | ${quantile(window, 0.5)} / ${quantile(window, 0.99)} / ${quantile(window, 1)} | ${reads.join(' | ')} |`);
  if (!holder && s >= FREE_S) {
    holder = await holdSnapshot(url, 'due-pinned-horizon');
  }
}
producing = false;
await producer;
await Promise.all(workers.map((w) => w.stop()));
await pool.end();
if (holder) await releaseSnapshot(holder);
await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
await admin.end();
