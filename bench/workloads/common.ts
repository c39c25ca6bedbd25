// Helpers the workloads share: a fresh schema per run, the options every child needs, counts.
import type pg from 'pg';
import { BENCH_SCHEMA, resetSchema, settle } from '../lib/bench-database.js';
import type { ChildOptions } from '../lib/child-options.js';
import type { BenchContext } from '../lib/workload.js';

/** Every run starts from an empty, freshly migrated schema and a checkpoint. */
export async function freshSchema(ctx: BenchContext): Promise<void> {
  await resetSchema(ctx.admin);
  await settle(ctx.admin);
}

export function childOptions(ctx: BenchContext, extra: Omit<ChildOptions, 'url' | 'schema'> = {}): ChildOptions {
  return { url: ctx.url, schema: BENCH_SCHEMA, ...extra };
}

/** Task rows by status. */
export async function countByStatus(admin: pg.Pool): Promise<Record<string, number>> {
  const r = await admin.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM ${BENCH_SCHEMA}.task GROUP BY status`,
  );
  return Object.fromEntries(r.rows.map((row) => [row.status, row.n]));
}

/** Rows a worker still has to finish (pending or processing), through the claim-order index. */
export async function unfinished(admin: pg.Pool): Promise<number> {
  const r = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${BENCH_SCHEMA}.task WHERE status IN ('pending', 'processing')`,
  );
  return r.rows[0]!.n;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
