// Claim cost with a long queue behind one group (issue 11): the same drain of healthy ordered
// rows (one per group) with 0, 50,000 and 500,000 rows blocked behind one dead head. Blocked rows
// are in none of the claim's indexes, so the drain should not slow down as they grow.
import { claim, defineTask, enqueue, enqueueMany, markDead, migrate, taskTable, type LeasedTable, type TaskRow } from '@leasehold/core';
import { drainClaims, explainClaim, type DrainResult } from '../lib/claim-drain.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';

interface TableState {
  readonly schema: string;
  readonly blocked: number;
  readonly table: LeasedTable<TaskRow>;
  /** Highest id present before the rounds; later rows are the rounds' own. */
  maxSetupId: string;
  /** Healthy groups made so far, so each refill uses new ones. */
  groups: number;
}

const states: TableState[] = [];
const sync = defineTask<{ i: number }>('sync', { ordered: true, handler: () => {} });
const CHUNK = 50_000;

async function healthy(ctx: BenchContext, state: TableState, n: number): Promise<void> {
  for (let done = 0; done < n; done += CHUNK) {
    const size = Math.min(CHUNK, n - done);
    const first = state.groups;
    state.groups += size;
    await enqueueMany(
      ctx.admin,
      sync,
      Array.from({ length: size }, (_, i) => ({ payload: { i: first + i }, groupKey: `healthy-${first + i}` })),
      { schema: state.schema },
    );
  }
}

async function build(ctx: BenchContext, blocked: number): Promise<TableState> {
  const schema = `claim_blocked_${blocked}`;
  await ctx.admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(ctx.admin, { schema });
  const state: TableState = { schema, blocked, table: taskTable(schema), maxSetupId: '0', groups: 0 };
  if (blocked > 0) {
    // the stuck group: a dead head (claimed, then refused for good), then `blocked` rows behind it
    await enqueue(ctx.admin, sync, { i: -1 }, { groupKey: 'stuck', schema });
    const [head] = await claim(ctx.admin, { schema, owner: 'bench', batch: 1, lease: '60s' });
    await markDead(ctx.admin, head!, { schema, error: 'bench: the head that blocks its group' });
    for (let done = 0; done < blocked; done += CHUNK) {
      const size = Math.min(CHUNK, blocked - done);
      await enqueueMany(ctx.admin, sync, Array.from({ length: size }, (_, i) => ({ payload: { i: done + i }, groupKey: 'stuck' })), { schema });
    }
  }
  await healthy(ctx, state, ctx.config.claimBlocked.healthy);
  await ctx.admin.query(`VACUUM ANALYZE ${schema}.task`);
  const max = await ctx.admin.query<{ id: string }>(`SELECT max(id)::text AS id FROM ${schema}.task`);
  state.maxSetupId = max.rows[0]!.id;
  return state;
}

/** Puts the table back: the round's finished rows go, as many new healthy groups come. */
async function restore(ctx: BenchContext, state: TableState): Promise<void> {
  const gone = await ctx.admin.query(`DELETE FROM ${state.schema}.task WHERE status = 'done'`);
  await healthy(ctx, state, gone.rowCount ?? 0);
  await ctx.admin.query(`VACUUM ANALYZE ${state.schema}.task`);
  await ctx.admin.query('CHECKPOINT');
}

export const claimBlocked: Workload = {
  name: 'claim-blocked',
  description: (c) =>
    `${c.claimBlocked.loops} loops × (claim ${c.claimBlocked.batch} → one fenced finalize), ${c.claimBlocked.drain.toLocaleString('en-US')} ordered rows ` +
    `(one per group, ${c.claimBlocked.healthy.toLocaleString('en-US')} pending) drained beside 0, ${c.claimBlocked.blocked
      .map((n) => n.toLocaleString('en-US'))
      .join(' and ')} rows blocked behind one dead head`,
  metrics: [
    { key: 'none', label: 'claim + finalize, nothing blocked', unit: 'jobs/s' },
    { key: 'small', label: 'claim + finalize, first blocked size', unit: 'jobs/s' },
    { key: 'large', label: 'claim + finalize, second blocked size', unit: 'jobs/s' },
    { key: 'smallRatio', label: 'first blocked size / nothing blocked', unit: '%', target: { op: '>=', value: 90 } },
    { key: 'largeRatio', label: 'second blocked size / nothing blocked', unit: '%', target: { op: '>=', value: 90 } },
  ],
  async setup(ctx) {
    states.length = 0;
    const sizes = [0, ...ctx.config.claimBlocked.blocked];
    ctx.log(`claim-blocked: building tables with ${sizes.map((n) => n.toLocaleString('en-US')).join(' / ')} blocked rows`);
    for (const n of sizes) states.push(await build(ctx, n));
    await ctx.admin.query('CHECKPOINT');
    if (ctx.config.explain) {
      for (const s of states) ctx.log(`EXPLAIN claim on ${s.schema}:\n${await explainClaim(ctx, s.table, ctx.config.claimBlocked.batch)}`);
    }
  },
  async round(ctx, round): Promise<RoundResult> {
    const { drain: n, loops, batch } = ctx.config.claimBlocked;
    // rotate which table goes first, so none always runs on a warmer cache
    const order = states.map((_, i) => states[(i + round) % states.length]!);
    const out = new Map<TableState, DrainResult>();
    for (const s of order) {
      out.set(s, await drainClaims(ctx, s.table, n, loops, batch));
      await restore(ctx, s);
    }
    const [none, small, large] = states.map((s) => out.get(s)!);
    const bad = [...out.values()].filter((r) => r.done !== n || r.lost !== 0);
    return {
      values: {
        none: none!.rate,
        small: small!.rate,
        large: large!.rate,
        smallRatio: (small!.rate / none!.rate) * 100,
        largeRatio: (large!.rate / none!.rate) * 100,
      },
      check: bad.length ? `done ${[...out.values()].map((r) => r.done).join('/')} of ${n}, lost ${[...out.values()].map((r) => r.lost).join('/')}` : 'ok',
    };
  },
  async teardown(ctx) {
    for (const s of states) await ctx.admin.query(`DROP SCHEMA IF EXISTS ${s.schema} CASCADE`);
    states.length = 0;
  },
};
