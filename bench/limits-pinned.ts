// What a long transaction elsewhere (the MVCC horizon held) does to a drain of tasks under a
// limit: the same preloaded tasks run by two workers (one process, library defaults), with no
// limit, under a concurrency limit of 1,000 (kept in stripes), under one of 20 (kept in its
// row's list) and, asked for as `keyed`, under one of 4 per key over LIMITS_PINNED_KEYS keys
// (default 50), each without and then with a REPEATABLE READ snapshot held beside it. Prints each
// drain's rate per tenth of its tasks, and the index entries its scans read per scan, as the
// server counts them (pg_stat_user_indexes). A measurement, not a test: it asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/limits-pinned.ts
//   (LIMITS_PINNED_TASKS, default 20,000; LIMITS_PINNED_KINDS, default none,striped,listed, or keyed;
//   LIMITS_PINNED_HELD: both (default), no or yes; LIMITS_PINNED_PRIORITY: the tasks' priority,
//   default 0)
// Works in a schema of its own (limits_pinned_<pid>) in that database, dropped at the end.
import pg from 'pg';
import { holdSnapshot, releaseSnapshot } from '../test/hold-snapshot.js';
import { entriesPerScan, indexReads, settledIndexReads } from './lib/index-reads.js';
import { rateByTenths } from './lib/rate-by-tenths.js';
import { createWorker, defineLimit, defineTask, enqueueMany, migrate } from '@leasehold/core';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TASKS = Number(process.env.LIMITS_PINNED_TASKS ?? 20_000);
const KINDS = (process.env.LIMITS_PINNED_KINDS ?? 'none,striped,listed').split(',') as Kind[];
const HELD = { both: [false, true], no: [false], yes: [true] }[process.env.LIMITS_PINNED_HELD ?? 'both'];
if (HELD === undefined) throw new Error('LIMITS_PINNED_HELD must be both, no or yes');
const PRIORITY = Number(process.env.LIMITS_PINNED_PRIORITY ?? 0);
const SCHEMA = `limits_pinned_${process.pid}`;
const INDEXES = ['task_pkey', 'task_claim', 'task_flow_ready', 'task_flow_held_id', 'task_leased'];

type Kind = 'none' | 'striped' | 'listed' | 'keyed';

const bounds: Record<Kind, number | undefined> = { none: undefined, striped: 1_000, listed: 20, keyed: 4 };
const KEYS = Number(process.env.LIMITS_PINNED_KEYS ?? 50);

async function drain(kind: Kind, pinned: boolean): Promise<string> {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(admin, { schema: SCHEMA });
  const bound = bounds[kind];
  const limit = bound === undefined ? undefined : kind === 'keyed' ? defineLimit('pinned', { concurrencyPerKey: bound }) : defineLimit('pinned', { concurrency: bound });
  let handled = 0;
  const task = defineTask<{ i: number }>('pinned', { ...(limit ? { limit } : {}), handler: () => void handled++ });
  for (let done = 0; done < TASKS; done += 5_000) {
    const n = Math.min(5_000, TASKS - done);
    await enqueueMany(admin, task, Array.from({ length: n }, (_, i) => ({ payload: { i: done + i }, priority: PRIORITY, ...(kind === 'keyed' ? { limitKey: `k${(done + i) % KEYS}` } : {}) })), { schema: SCHEMA });
  }
  await admin.query(`VACUUM ANALYZE ${SCHEMA}.task`);
  const holder = pinned ? await holdSnapshot(url, 'limits-pinned-horizon') : undefined;
  const pool = new pg.Pool({ connectionString: url, max: 12 });
  const workers = [0, 1].map(() => createWorker({ pool, tasks: [task], schema: SCHEMA, logger: null }));
  const before = await indexReads(admin, SCHEMA);
  const t0 = performance.now();
  await Promise.all(workers.map((w) => w.start()));
  const tenths = await rateByTenths(() => handled, TASKS, t0, 600_000);
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(workers.map((w) => w.stop()));
  await pool.end(); // the sessions' counts reach the statistics as they end
  if (holder) await releaseSnapshot(holder);
  const after = await settledIndexReads(admin, SCHEMA);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.end();
  const reads = entriesPerScan(before, after, INDEXES);
  const rate = Math.round(handled / seconds).toLocaleString('en-US');
  return `| ${kind}${bound === undefined ? '' : ` (${bound})`} | ${pinned ? 'held' : '—'} | ${rate} | ${tenths.map((x) => x.toLocaleString('en-US')).join(' ')} | ${reads.join(' | ')} |`;
}

console.log(`${TASKS.toLocaleString('en-US')} preloaded no-op tasks, two workers at the library defaults; index entries read per scan`);
console.log(`| limit | snapshot | tasks/s | tasks/s per tenth | ${INDEXES.join(' | ')} |`);
console.log(`|---|---|---:|---|${INDEXES.map(() => '---:').join('|')}|`);
for (const kind of KINDS) for (const pinned of HELD) console.log(await drain(kind, pinned));
