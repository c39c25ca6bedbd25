import type { LeasedTable } from '@leasehold/core';
import { leaseClaim } from '@leasehold/core/internal';
import type pg from 'pg';

/** What one statement (a claim, a fenced write) read, from its EXPLAIN (ANALYZE) plan. */
export interface ClaimPlanReads {
  /** Rows of the leased table that the claim's scans returned or filtered out, over all loops. */
  readonly rowsTouched: number;
  /** Of those, rows a scan read and then discarded (`Rows Removed by Filter`). */
  readonly rowsDiscarded: number;
  /** The plan, as text, for failure messages. */
  readonly plan: string;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** One statement as an executor received it. */
export interface RecordedStatement {
  readonly text: string;
  readonly values: unknown[];
}

/**
 * Calls `send` with an executor that only records what it is asked to run (and answers with no
 * rows), and returns the first statement: the one a leasehold function would send.
 */
export async function recordStatement(send: (executor: { query: (arg: string | { text: string; values?: unknown[] }, values?: unknown[]) => Promise<{ rows: never[]; rowCount: number }> }) => Promise<unknown>): Promise<RecordedStatement> {
  let statement: RecordedStatement | undefined;
  await send({
    query: async (arg, values) => {
      statement ??= typeof arg === 'string' ? { text: arg, values: values ?? [] } : { text: arg.text, values: arg.values ?? [] };
      return { rows: [], rowCount: 0 };
    },
  });
  if (statement === undefined) throw new Error('nothing was sent');
  return statement;
}

/**
 * Runs the claim `leaseClaim` would send, under EXPLAIN (ANALYZE, FORMAT JSON) in a transaction
 * that is rolled back, and counts the rows its scans of the leased table touched. A claim whose
 * cost follows only what it can take touches about `batch` rows per source, however many rows
 * wait behind a group's head or are scheduled for later.
 */
export async function claimPlanReads(
  pool: pg.Pool,
  table: LeasedTable<unknown>,
  batch: number,
  names?: readonly string[],
  flows?: readonly string[],
): Promise<ClaimPlanReads> {
  const statement = await recordStatement((recorder) => leaseClaim(recorder, table, { owner: 'explain', batch, leaseMs: 60_000, names, flows }));
  return statementPlanReads(pool, table.table, statement);
}

/**
 * Runs `statement` under EXPLAIN (ANALYZE, FORMAT JSON) in a transaction that is rolled back
 * (so it changes nothing), and counts the rows its scans of `tableName` touched.
 */
export async function statementPlanReads(pool: pg.Pool, tableName: string, statement: RecordedStatement): Promise<ClaimPlanReads> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values);
    const root = rows[0]!['QUERY PLAN'][0].Plan;
    let touched = 0;
    let discarded = 0;
    const visit = (node: PlanNode) => {
      if (node['Relation Name'] === tableName && /Scan/.test(node['Node Type'])) {
        const loops = node['Actual Loops'] ?? 1;
        // EXPLAIN reports rows and removed rows per loop, as averages rounded to whole rows
        // (before PostgreSQL 18) or to hundredths: over a parallel scan's three loops, 20,000
        // removed rows read as 6,667 a loop, 20,001 in all. The fewest rows each average can
        // stand for is counted, which is exact for one loop and at most half a row a loop short.
        const total = (average: number | undefined) => {
          if (average === undefined || average === 0 || loops === 1) return (average ?? 0) * loops;
          return Math.max(0, Math.ceil((average - (Number.isInteger(average) ? 0.5 : 0.005)) * loops));
        };
        const removed = total(node['Rows Removed by Filter']) + total(node['Rows Removed by Index Recheck']);
        touched += total(node['Actual Rows']) + removed;
        discarded += removed;
      }
      node.Plans?.forEach(visit);
    };
    visit(root);
    return { rowsTouched: touched, rowsDiscarded: discarded, plan: JSON.stringify(root, null, 1) };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}
