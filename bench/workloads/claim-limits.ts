// What a limit costs per claim (issue 14): the same claim → fenced finalize drain of tasks under
// no limit, and of tasks under a limit whose bounds never bind — a global concurrency, a
// concurrency per key over many keys, a rate — so the difference is the claim's bookkeeping: the
// limit's row locked and written, a lookup per running lease, a probe per key, the window's starts.
import { defineLimit, defineTask, enqueueMany, migrate, taskTable, type LeasedTable, type LimitDefinition, type TaskDefinition, type TaskRow } from '@leasehold/core';
import { leaseClaim, leaseFinalizeMany, limitRegisterMany, toDone } from '@leasehold/core/internal';
import pg from 'pg';
import { hrtimeMs } from '../lib/stats.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';

interface Variant {
  readonly key: string;
  readonly limit: LimitDefinition | null;
  readonly keyed: boolean;
}

const VARIANTS: readonly Variant[] = [
  { key: 'none', limit: null, keyed: false },
  { key: 'global', limit: defineLimit('bench-global', { concurrency: 10_000 }), keyed: false },
  { key: 'perKey', limit: defineLimit('bench-per-key', { concurrencyPerKey: 10_000 }), keyed: true },
  { key: 'rate', limit: defineLimit('bench-rate', { rate: { limit: 10_000, period: '100ms' } }), keyed: false },
];

interface TableState {
  readonly variant: Variant;
  readonly schema: string;
  readonly table: LeasedTable<TaskRow>;
  readonly task: TaskDefinition<{ i: number }>;
}

const states: TableState[] = [];

async function fill(ctx: BenchContext, s: TableState, n: number): Promise<void> {
  const { keys } = ctx.config.claimLimits;
  for (let done = 0; done < n; done += 10_000) {
    const size = Math.min(10_000, n - done);
    const items = Array.from({ length: size }, (_, i) => ({ payload: { i: done + i }, ...(s.variant.keyed ? { limitKey: `k${(done + i) % keys}` } : {}) }));
    await enqueueMany(ctx.admin, s.task, items, { schema: s.schema });
  }
}

async function build(ctx: BenchContext, variant: Variant): Promise<TableState> {
  const schema = `claim_limits_${variant.key.toLowerCase()}`;
  await ctx.admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(ctx.admin, { schema });
  const task = defineTask<{ i: number }>('call', { ...(variant.limit ? { limit: variant.limit } : {}), handler: () => {} });
  const state = { variant, schema, table: taskTable(schema), task };
  if (variant.limit) await limitRegisterMany(ctx.admin, state.table, 'bench', [{ limit: variant.limit, taskNames: ['call'] }], ['call']);
  await fill(ctx, state, ctx.config.claimLimits.pending);
  await ctx.admin.query(`VACUUM ANALYZE ${schema}.task`);
  return state;
}

/** `loops` concurrent claim → fenced finalize loops until `n` rows are done. */
async function drain(ctx: BenchContext, s: TableState, n: number, loops: number): Promise<{ rate: number; claimMs: number; done: number; lost: number }> {
  const { batch } = ctx.config.claimLimits;
  const flows = s.variant.limit ? [s.variant.limit.name] : undefined;
  const pool = new pg.Pool({ connectionString: ctx.url, max: loops });
  try {
    await Promise.all(Array.from({ length: loops }, () => pool.query('SELECT 1')));
    let taken = 0;
    let done = 0;
    let lost = 0;
    let claims = 0;
    let claimTime = 0;
    const loop = async (k: number) => {
      while (taken < n) {
        const want = Math.min(batch, n - taken);
        // reserved while the claim runs, so the loops together claim no more than n
        taken += want;
        const c0 = process.hrtime.bigint();
        const { claimed } = await leaseClaim(pool, s.table, { owner: `bench-${k}`, batch: want, leaseMs: 60_000, flows });
        claimTime += hrtimeMs(c0, process.hrtime.bigint());
        claims++;
        taken -= want - claimed.length;
        if (claimed.length === 0) continue;
        const results = await leaseFinalizeMany(pool, s.table, claimed.map((t) => ({ id: t.id, leaseVersion: t.leaseVersion, transition: toDone(), groupKey: null })));
        for (const r of results) {
          if (r.won) done++;
          else lost++;
        }
      }
    };
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: loops }, (_, k) => loop(k)));
    const ms = hrtimeMs(t0, process.hrtime.bigint());
    return { rate: (done / ms) * 1000, claimMs: claimTime / claims, done, lost };
  } finally {
    await pool.end();
  }
}

async function restore(ctx: BenchContext, s: TableState): Promise<void> {
  const gone = await ctx.admin.query(`DELETE FROM ${s.schema}.task WHERE status = 'done'`);
  await fill(ctx, s, gone.rowCount ?? 0);
  await ctx.admin.query(`VACUUM ANALYZE ${s.schema}.task`);
  await ctx.admin.query('CHECKPOINT');
}

export const claimLimits: Workload = {
  name: 'claim-limits',
  description: (c) =>
    `${c.claimLimits.loops} loops × (claim ${c.claimLimits.batch} → one fenced finalize) drain ${c.claimLimits.drain.toLocaleString('en-US')} of ` +
    `${c.claimLimits.pending.toLocaleString('en-US')} pending tasks, then 1 loop a quarter as many ("alone"), under no limit and under limits ` +
    `that never bind: concurrency 10,000; 10,000 per key over ${c.claimLimits.keys} keys; 10,000 starts per 100 ms`,
  metrics: [
    { key: 'none', label: 'claim + finalize, no limit', unit: 'jobs/s' },
    { key: 'global', label: 'claim + finalize, global concurrency', unit: 'jobs/s' },
    { key: 'perKey', label: 'claim + finalize, concurrency per key', unit: 'jobs/s' },
    { key: 'rate', label: 'claim + finalize, rate', unit: 'jobs/s' },
    { key: 'noneClaimMs', label: 'one claim of the batch, no limit', unit: 'ms' },
    { key: 'globalClaimMs', label: 'one claim, global concurrency', unit: 'ms' },
    { key: 'perKeyClaimMs', label: 'one claim, concurrency per key', unit: 'ms' },
    { key: 'rateClaimMs', label: 'one claim, rate', unit: 'ms' },
    { key: 'noneAloneMs', label: 'one claim alone (1 loop), no limit', unit: 'ms' },
    { key: 'globalAloneMs', label: 'one claim alone, global concurrency', unit: 'ms' },
    { key: 'perKeyAloneMs', label: 'one claim alone, concurrency per key', unit: 'ms' },
    { key: 'rateAloneMs', label: 'one claim alone, rate', unit: 'ms' },
  ],
  async setup(ctx) {
    states.length = 0;
    ctx.log(`claim-limits: building ${VARIANTS.length} tables of ${ctx.config.claimLimits.pending.toLocaleString('en-US')} pending tasks`);
    for (const v of VARIANTS) states.push(await build(ctx, v));
    await ctx.admin.query('CHECKPOINT');
  },
  async round(ctx, round): Promise<RoundResult> {
    const { drain: n, loops } = ctx.config.claimLimits;
    const order = states.map((_, i) => states[(i + round) % states.length]!);
    const out = new Map<string, Awaited<ReturnType<typeof drain>>>();
    const values: Record<string, number> = {};
    for (const s of order) {
      // concurrent claimers (a limit's claims take turns), then one alone (the statement's own cost)
      out.set(s.variant.key, await drain(ctx, s, n, loops));
      values[`${s.variant.key}AloneMs`] = (await drain(ctx, s, n / 4, 1)).claimMs;
      await restore(ctx, s);
    }
    for (const [key, r] of out) {
      values[key] = r.rate;
      values[`${key}ClaimMs`] = r.claimMs;
    }
    const bad = [...out.values()].filter((r) => r.done !== n || r.lost !== 0);
    return { values, check: bad.length ? `done ${[...out.values()].map((r) => r.done).join('/')} of ${n}` : 'ok' };
  },
  async teardown(ctx) {
    for (const s of states) await ctx.admin.query(`DROP SCHEMA IF EXISTS ${s.schema} CASCADE`);
    states.length = 0;
  },
};
