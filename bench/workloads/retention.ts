// Retention at 10,000,000 finished rows (issue 36): does the workers' default retention keep up
// with a stream of 5,000 rows/s coming of age, without slowing the workers that take its turns,
// and does `leasehold stats` answer in ≤ 100 ms beside that history?
//
// Set-up (once): a schema of its own whose task table holds `finished` done rows, one every
// 1/5,000 s back from now, made by one INSERT … SELECT generate_series. Each round runs
// process-1x8's drain (one worker process, concurrency 8, prefetch 492, batch 250) of `tasks`
// preloaded no-op tasks on that table twice, A/B in alternating order: retention off, and
// retention on with a turn every second and an age that leaves the oldest 10 s of history due
// at "go" — from then on, 5,000 rows a second come of age, as behind a 5,000 jobs/s stream.
import { enqueueMany, leaseQueueStats, migrate, taskTable } from '@leasehold/core';
import { noop } from '../lib/bench-task.js';
import type { BenchConfig } from '../lib/options.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';
import { childOptions } from './common.js';
import { CPU_METRICS, drain } from './drain.js';

const SCHEMA = 'retention_bench';
/** Rows coming of age per second: the stream the purge has to keep up with. */
const STREAM_PER_S = 5_000;
/** History already due at "go" (seconds of the stream). */
const BACKLOG_S = 10;
const EVERY_MS = 1_000;

const sizes = (c: BenchConfig) => ({
  finished: Number(process.env.BENCH_RETENTION_ROWS ?? (c.quick ? 100_000 : 10_000_000)),
  tasks: Number(process.env.BENCH_RETENTION_TASKS ?? (c.quick ? 20_000 : 200_000)),
});

async function setup(ctx: BenchContext): Promise<void> {
  const { admin } = ctx;
  const { finished } = sizes(ctx.config);
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(admin, { schema: SCHEMA });
  const t0 = performance.now();
  await admin.query(
    `INSERT INTO ${SCHEMA}.task (name, payload, status, attempts, lease_version, done_at)
     SELECT 'history', '{}', 'done', 1, 1, now() - g * (1000000 / $2::float8) * interval '1 microsecond'
     FROM generate_series(1, $1::int) AS g`,
    [finished, STREAM_PER_S],
  );
  await admin.query(`VACUUM ANALYZE ${SCHEMA}.task`);
  await admin.query('CHECKPOINT');
  const size = await admin.query<{ size: string }>(`SELECT pg_size_pretty(pg_total_relation_size('${SCHEMA}.task')) AS size`);
  ctx.log(`retention: ${finished.toLocaleString('en')} done rows in ${((performance.now() - t0) / 1000).toFixed(0)} s, table + indexes ${size.rows[0]!.size}`);
}

/** One drain of `tasks` no-op tasks beside the history, its worker's retention off or on. */
async function run(ctx: BenchContext, on: boolean) {
  const { admin } = ctx;
  const { tasks } = sizes(ctx.config);
  // the previous run's tasks go, so every run starts beside the same history
  await admin.query(`DELETE FROM ${SCHEMA}.task WHERE name <> 'history'`);
  await admin.query(`VACUUM ${SCHEMA}.task`);
  for (let start = 0; start < tasks; start += 1000) {
    const items = Array.from({ length: Math.min(1000, tasks - start) }, (_, k) => ({ payload: { i: start + k } }));
    await enqueueMany(admin, noop, items, { schema: SCHEMA });
  }
  await admin.query(`ANALYZE ${SCHEMA}.task`);
  await admin.query('CHECKPOINT');
  // the age that leaves the oldest BACKLOG_S seconds of history due now
  const oldest = await admin.query<{ ms: number }>(
    `SELECT extract(epoch FROM now() - min(done_at)) * 1000 AS ms FROM ${SCHEMA}.task WHERE status = 'done'`,
  );
  const doneMs = Math.floor(Number(oldest.rows[0]!.ms) - BACKLOG_S * 1000);
  const options = {
    ...childOptions(ctx, { concurrency: 8, prefetch: ctx.config.process.prefetch, batch: ctx.config.process.batch }),
    schema: SCHEMA,
    retention: on ? { doneMs, everyMs: EVERY_MS } : (false as const),
  };
  // through the claim's and the leases' partial indexes: beside 10,000,000 done rows a plain
  // `status IN (…)` is a parallel scan of the whole table, polled every 2 ms at the drain's end
  const unfinished = async () =>
    (
      await admin.query<{ n: number }>(
        `SELECT ((SELECT count(*) FROM ${SCHEMA}.task WHERE status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NULL)
               + (SELECT count(*) FROM ${SCHEMA}.task WHERE status = 'processing'))::int AS n`,
      )
    ).rows[0]!.n;
  const r = await drain(ctx, { role: 'worker', n: tasks, children: [options], unfinished });
  const purged = (r.stats[0]?.purged ?? { rows: 0, turns: 0, ms: 0, behind: 0 }) as { rows: number; turns: number; ms: number; behind: number };
  // history past the age when the worker stopped: what the purge had not caught up with
  const due = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${SCHEMA}.task WHERE status = 'done' AND name = 'history' AND done_at < now() - $1 * interval '1 millisecond'`,
    [doneMs],
  );
  return { r, purged, dueLeft: on ? due.rows[0]!.n : NaN };
}

/** Milliseconds of what `leasehold stats` asks of the task table (its size, then its counts), median of 5. */
async function statsMs(ctx: BenchContext): Promise<number> {
  const table = taskTable(SCHEMA);
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await leaseQueueStats(ctx.admin, table);
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[2]!;
}

export const retention: Workload = {
  name: 'retention',
  description: (c) => {
    const { finished, tasks } = sizes(c);
    return (
      `${finished.toLocaleString('en-US')} done rows, one per 1/${STREAM_PER_S.toLocaleString('en-US')} s back from now; per round, A/B in alternating order, ` +
      `process-1x8's drain of ${tasks.toLocaleString('en-US')} no-op tasks beside them with the worker's retention off, and on (a turn every ${EVERY_MS / 1000} s, ` +
      `an age that leaves ${BACKLOG_S} s of history due, then ${STREAM_PER_S.toLocaleString('en-US')} rows/s come of age); ` +
      '`leasehold stats` of the table: its two statements (size, counts), median of 5, right after the drains and after a VACUUM'
    );
  },
  metrics: [
    { key: 'rateOff', label: 'process-1x8 beside the history, retention off', unit: 'jobs/s' },
    { key: 'rateOn', label: 'process-1x8 beside the history, retention on', unit: 'jobs/s' },
    { key: 'ratio', label: 'on / off', unit: '%', target: { op: '>=', value: 95 } },
    { key: 'purgeRate', label: 'rows deleted per second while on', unit: 'rows/s', target: { op: '>=', value: STREAM_PER_S } },
    { key: 'dueLeft', label: 'rows past the age left when the worker stopped', unit: 'rows' },
    { key: 'turnMs', label: 'retention turn, mean', unit: 'ms' },
    { key: 'statsMs', label: '`leasehold stats` of the table (leaseQueueStats), median', unit: 'ms', target: { op: '<=', value: 100 } },
    { key: 'statsDrainedMs', label: 'the same right after the drains, before vacuum', unit: 'ms' },
    ...CPU_METRICS.map((m) => ({ ...m, key: `${m.key}On`, label: `${m.label}, retention on` })),
    ...CPU_METRICS.map((m) => ({ ...m, key: `${m.key}Off`, label: `${m.label}, retention off` })),
  ],
  setup,
  round: async (ctx, round): Promise<RoundResult> => {
    // alternating order: neither variant always runs first, on a cache the other warmed
    const order = round % 2 === 1 ? [false, true] : [true, false];
    const runs = new Map<boolean, Awaited<ReturnType<typeof run>>>();
    for (const on of order) runs.set(on, await run(ctx, on));
    const off = runs.get(false)!;
    const on = runs.get(true)!;
    // right after the drains the claim's and the leases' partial indexes still hold the entries
    // of the 2 × tasks rows that went through them, until vacuum (autovacuum, in production)
    // removes them; the stats read those indexes
    const statsDrained = await statsMs(ctx);
    await ctx.admin.query(`VACUUM ${SCHEMA}.task`);
    const stats = await statsMs(ctx);
    const { tasks } = sizes(ctx.config);
    // a sanity check, as every workload's: nothing lost or handled twice. Whether the purge kept
    // up is a number (dueLeft: about one turn's worth, 5,000, when it does), never a failure
    const check = off.r.handled === tasks && on.r.handled === tasks ? 'ok' : `handled ${off.r.handled} / ${on.r.handled} of ${tasks}`;
    return {
      values: {
        rateOff: off.r.rate,
        rateOn: on.r.rate,
        ratio: (100 * on.r.rate) / off.r.rate,
        purgeRate: on.purged.rows / on.r.seconds,
        dueLeft: on.dueLeft,
        turnMs: on.purged.turns === 0 ? NaN : on.purged.ms / on.purged.turns,
        statsMs: stats,
        statsDrainedMs: statsDrained,
        clientCpuOn: on.r.clientCpu,
        serverCpuOn: on.r.serverCpu,
        clientCpuOff: off.r.clientCpu,
        serverCpuOff: off.r.serverCpu,
      },
      check,
      details: { secondsOn: on.r.seconds, secondsOff: off.r.seconds, purged: on.purged },
    };
  },
  teardown: async (ctx) => {
    if (!ctx.config.keepDatabase) await ctx.admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  },
};
