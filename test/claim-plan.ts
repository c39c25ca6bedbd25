import type { LeasedTable } from '@leasehold/core';
import { leaseClaim } from '@leasehold/core/internal';
import { createRequire } from 'node:module';
import type pg from 'pg';
import { execute } from '../packages/core/src/sql/execute.js';
import { CLAIM_CONNECTION_SETTINGS } from '../packages/core/src/worker/listener.js';

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
  plan: PlanKind = 'custom',
): Promise<ClaimPlanReads> {
  const statement = await recordStatement((recorder) => leaseClaim(recorder, table, { owner: 'explain', batch, leaseMs: 60_000, names, flows }));
  return statementPlanReads(pool, table.table, statement, plan);
}

/**
 * Which plan a statement runs under: `custom`, planned for its values (an unnamed statement, or
 * a named one's first five runs on a connection), or `generic`, planned once without them, with
 * the settings of a worker's claim connection (`CLAIM_CONNECTION_SETTINGS`: no sequential scans)
 * — the plan a worker's claims run from their first.
 */
export type PlanKind = 'custom' | 'generic';

/** Both kinds, for a scale test that bounds what a claim reads under each. */
export const PLAN_KINDS: readonly PlanKind[] = ['custom', 'generic'];

// pg's own conversion of a parameter to its text (arrays, dates, JSON), which EXECUTE then
// receives as a literal of the prepared parameter's type
const require = createRequire(import.meta.url);
const pgUtils = require('pg/lib/utils.js') as { prepareValue(value: unknown): string | null; escapeLiteral(text: string): string };

function literal(value: unknown): string {
  const text = pgUtils.prepareValue(value);
  return text === null ? 'NULL' : pgUtils.escapeLiteral(text);
}

/**
 * Runs `statement` under EXPLAIN (ANALYZE, FORMAT JSON) in a transaction that is rolled back
 * (so it changes nothing), and counts the rows its scans of `tableName` touched.
 */
export async function statementPlanReads(pool: pg.Pool, tableName: string, statement: RecordedStatement, plan: PlanKind = 'custom'): Promise<ClaimPlanReads> {
  const client = await pool.connect();
  let prepared = false;
  try {
    await client.query('BEGIN');
    let explain: { text: string; values: unknown[] } = { text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, values: statement.values };
    if (plan === 'generic') {
      // as on a worker's claim connection; undone with the transaction's rollback
      await execute(client, CLAIM_CONNECTION_SETTINGS);
      await client.query(`PREPARE leasehold_generic_plan AS ${statement.text}`);
      prepared = true;
      const args = statement.values.map(literal).join(', ');
      explain = { text: `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE leasehold_generic_plan${args === '' ? '' : `(${args})`}`, values: [] };
    }
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(explain.text, explain.values);
    if (plan === 'generic') {
      const used = await client.query<{ generic_plans: string; custom_plans: string }>(`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'leasehold_generic_plan'`);
      if (Number(used.rows[0]?.generic_plans) !== 1 || Number(used.rows[0]?.custom_plans) !== 0) throw new Error(`not run on a generic plan: ${JSON.stringify(used.rows)}`);
    }
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
    // a prepared statement belongs to the session, not the transaction
    if (prepared) await client.query('DEALLOCATE leasehold_generic_plan');
    client.release();
  }
}
