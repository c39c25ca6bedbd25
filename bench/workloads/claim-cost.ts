// Claim cost as the table grows: the same drain (claim + one fenced finalize per batch, with the
// public primitives) against a table holding 0 finished rows and one holding 1,000,000, both with
// 100,000 pending. Finished rows must stay out of the claim's way (partial indexes).
import type pg from 'pg';
import { migrate, taskTable, type LeasedTable, type TaskRow } from '@leasehold/core';
import { drainClaims, explainClaim, type DrainResult } from '../lib/claim-drain.js';
import type { BenchContext, RoundResult, Workload } from '../lib/workload.js';

const EMPTY = 'claim_empty';
const HISTORY = 'claim_history';

interface TableState {
  readonly schema: string;
  readonly table: LeasedTable<TaskRow>;
  /** Highest id of the rows present before the rounds; later rows are the rounds' own. */
  maxSetupId: string;
}

const states: TableState[] = [];

async function build(ctx: BenchContext, schema: string, finished: number): Promise<TableState> {
  const { admin } = ctx;
  const { pending } = ctx.config.claimCost;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(admin, { schema });
  // history is older than the backlog, as in production: finished rows have the lower ids
  if (finished > 0) {
    await admin.query(
      `INSERT INTO ${schema}.task (name, payload, status, attempts, lease_version, done_at)
       SELECT 'noop', jsonb_build_object('i', g), 'done', 1, 1, now() FROM generate_series(1, $1) g`,
      [finished],
    );
  }
  await insertPending(admin, schema, pending);
  await admin.query(`VACUUM ANALYZE ${schema}.task`);
  const max = await admin.query<{ id: string }>(`SELECT max(id)::text AS id FROM ${schema}.task`);
  return { schema, table: taskTable(schema), maxSetupId: max.rows[0]!.id };
}

async function insertPending(admin: pg.Pool, schema: string, n: number): Promise<void> {
  await admin.query(
    `INSERT INTO ${schema}.task (name, payload) SELECT 'noop', jsonb_build_object('i', g) FROM generate_series(1, $1) g`,
    [n],
  );
}

async function drain(ctx: BenchContext, state: TableState): Promise<DrainResult> {
  const { drain: n, loops, batch } = ctx.config.claimCost;
  return drainClaims(ctx, state.table, n, loops, batch);
}

/** Puts the table back as it was: the round's finished rows go, as many new pending rows come. */
async function restore(ctx: BenchContext, state: TableState): Promise<void> {
  const { admin } = ctx;
  const gone = await admin.query(`DELETE FROM ${state.schema}.task WHERE status = 'done' AND id > $1`, [state.maxSetupId]);
  await insertPending(admin, state.schema, gone.rowCount ?? 0);
  await admin.query(`VACUUM ANALYZE ${state.schema}.task`);
  await admin.query('CHECKPOINT');
}

export const claimCost: Workload = {
  name: 'claim-cost',
  description: (c) =>
    `${c.claimCost.loops} loops × (claim ${c.claimCost.batch} → one fenced finalize), ${c.claimCost.drain.toLocaleString('en-US')} rows drained ` +
    `from ${c.claimCost.pending.toLocaleString('en-US')} pending, with 0 vs ${c.claimCost.finished.toLocaleString('en-US')} finished rows retained`,
  metrics: [
    { key: 'empty', label: 'claim + finalize, no finished rows', unit: 'jobs/s' },
    { key: 'history', label: 'claim + finalize, finished rows retained', unit: 'jobs/s' },
    { key: 'ratio', label: 'with history / empty', unit: '%', target: { op: '>=', value: 80 } },
  ],
  async setup(ctx) {
    states.length = 0;
    ctx.log(`claim-cost: building ${EMPTY} and ${HISTORY} (${ctx.config.claimCost.finished.toLocaleString('en-US')} finished rows)`);
    states.push(await build(ctx, EMPTY, 0), await build(ctx, HISTORY, ctx.config.claimCost.finished));
    await ctx.admin.query('CHECKPOINT');
    if (ctx.config.explain) {
      for (const s of states) ctx.log(`EXPLAIN claim on ${s.schema}:\n${await explainClaim(ctx, s.table, ctx.config.claimCost.batch)}`);
    }
  },
  async round(ctx, round): Promise<RoundResult> {
    // alternate which table goes first, so neither always runs on a warmer cache
    const order = round % 2 ? states : [...states].reverse();
    const out: Record<string, DrainResult> = {};
    for (const s of order) {
      out[s.schema] = await drain(ctx, s);
      await restore(ctx, s);
    }
    const empty = out[EMPTY]!;
    const history = out[HISTORY]!;
    const { drain: n } = ctx.config.claimCost;
    const bad = [empty, history].filter((r) => r.done !== n || r.lost !== 0);
    return {
      values: { empty: empty.rate, history: history.rate, ratio: (history.rate / empty.rate) * 100 },
      check: bad.length ? `done ${empty.done}/${history.done} of ${n}, lost ${empty.lost}/${history.lost}` : 'ok',
    };
  },
  async teardown(ctx) {
    for (const schema of [EMPTY, HISTORY]) await ctx.admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    states.length = 0;
  },
};
