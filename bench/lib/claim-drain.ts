// The claim → fenced finalize loop of the claim workloads, with the public primitives, and an
// EXPLAIN of the claim statement.
import pg from 'pg';
import { claim, type LeasedTable, type TaskRow } from '@leasehold/core';
import { leaseClaim, leaseFinalizeMany, toDone } from '@leasehold/core/internal';
import { hrtimeMs } from './stats.js';
import type { BenchContext } from './workload.js';

/** What one drain did. */
export interface DrainResult {
  readonly rate: number;
  readonly done: number;
  readonly lost: number;
}

/** `loops` concurrent claim (`batch`) → one fenced finalize loops until `n` rows are done; returns jobs/s. */
export async function drainClaims(ctx: BenchContext, table: LeasedTable<TaskRow>, n: number, loops: number, batch: number): Promise<DrainResult> {
  const pool = new pg.Pool({ connectionString: ctx.url, max: loops });
  try {
    await Promise.all(Array.from({ length: loops }, () => pool.query('SELECT 1')));
    let taken = 0;
    let done = 0;
    let lost = 0;
    const loop = async (k: number) => {
      while (taken < n) {
        const want = Math.min(batch, n - taken);
        taken += want;
        const tasks = await claim(pool, { table, owner: `bench-${k}`, batch: want, lease: '60s' });
        if (tasks.length === 0) return;
        const results = await leaseFinalizeMany(
          pool,
          table,
          tasks.map((t) => ({ id: t.id, leaseVersion: t.leaseVersion, transition: toDone(), groupKey: t.groupKey })),
        );
        for (const r of results) {
          if (r.won) done++;
          else lost++;
        }
      }
    };
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: loops }, (_, k) => loop(k)));
    const ms = hrtimeMs(t0, process.hrtime.bigint());
    return { rate: (done / ms) * 1000, done, lost };
  } finally {
    await pool.end();
  }
}

/** EXPLAIN (ANALYZE, BUFFERS) of the claim statement, rolled back so nothing changes. */
export async function explainClaim(ctx: BenchContext, table: LeasedTable<TaskRow>, batch: number): Promise<string> {
  let text = '';
  let values: unknown[] = [];
  // leaseClaim compiles its statement for a plain pg executor; this one only records it (as
  // text + values, or as a named query config)
  const recorder = {
    query: async (arg: string | { text: string; values?: unknown[] }, v?: unknown[]) => {
      text = typeof arg === 'string' ? arg : arg.text;
      values = (typeof arg === 'string' ? v : arg.values) ?? [];
      return { rows: [], rowCount: 0 };
    },
  };
  await leaseClaim(recorder, table, { owner: 'explain', batch, leaseMs: 60_000 });
  const explain = async (generic: boolean) => {
    const client = await ctx.admin.connect();
    try {
      await client.query('BEGIN');
      let plan;
      if (generic) {
        // the worker prepares the claim, and after five runs PostgreSQL may switch to the
        // generic plan: show that one too (EXPLAIN EXECUTE takes no bound parameters, so the
        // values go in as literals; they are numbers and fixed strings)
        await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await client.query(`PREPARE leasehold_bench_claim AS ${text}`);
        const literals = values.map((v) => (typeof v === 'number' ? String(v) : `'${String(v).replaceAll("'", "''")}'`));
        plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE leasehold_bench_claim(${literals.join(', ')})`);
      } else {
        plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
      }
      return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      await client.query('ROLLBACK');
      // a prepared statement outlives the transaction
      if (generic) await client.query('DEALLOCATE ALL');
      client.release();
    }
  };
  return `-- custom plan (these parameters)\n${await explain(false)}\n-- generic plan (a prepared statement after five runs)\n${await explain(true)}`;
}
