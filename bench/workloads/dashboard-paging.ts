// The dashboard's list paging at 1,000,000 rows (issue 17): the first, a middle and the last page
// of every filter the task list offers (status, name, group key, creation time), each fetched over
// HTTP from a running dashboard, so a page's time is what a person waits for: the id bounds, a
// time bound's binary search, the page's statement and the rendering. Target: each under 200 ms.
// And the overview (issue 33): one request, all its statements and the rendering; target 100 ms,
// at 10,000,000 rows too (BENCH_DASHBOARD_ROWS=10000000).
import { taskTable, type TaskStatus } from '@leasehold/core';
import { leasedIdAt, leasedListPage, startDashboard, type ListFilter, type RunningDashboard } from '@leasehold/dashboard';
import pg from 'pg';
import type { BenchContext, Metric, RoundResult, Workload } from '../lib/workload.js';
import { fillTasks } from './dashboard-fill.js';
import { explainOverview } from './dashboard-overview-explain.js';

const SCHEMA = 'dashboard_paging';
const PAGE_SIZE = 50;
const TARGET_MS = 200;
const OVERVIEW_TARGET_MS = 100;
/** Overview requests per round after the first: their median is the round's figure. */
const OVERVIEW_REPEATS = 5;

/** One filter of the list, as its query string, and the same as SQL (to find its pages). */
interface Case {
  readonly key: string;
  readonly label: string;
  readonly query: Readonly<Record<string, string>>;
  readonly where: string;
}

// the table's shape: see dashboard-fill.ts

/** The filters, with the time filter's day fixed when they are made (once, in setup). */
function cases(): Case[] {
  const day = (from: number) => new Date(Date.now() - from * 86_400_000).toISOString().slice(0, 19);
  const status = (s: TaskStatus): Case => ({ key: s, label: `status ${s}`, query: { status: s }, where: `status = '${s}'` });
  return [
    { key: 'all', label: 'no filter', query: {}, where: 'true' },
    status('pending'),
    status('processing'),
    status('done'),
    status('dead'),
    { key: 'name', label: 'name mail.send (40 %)', query: { name: 'mail.send' }, where: `name = 'mail.send'` },
    { key: 'rareName', label: 'name invoice.void (1 row in 2,000)', query: { name: 'invoice.void' }, where: `name = 'invoice.void'` },
    { key: 'group', label: 'group key (one group, ~10 rows)', query: { group: 'order-1234' }, where: `group_key = 'order-1234'` },
    { key: 'deadName', label: 'status dead + name mail.send', query: { status: 'dead', name: 'mail.send' }, where: `status = 'dead' AND name = 'mail.send'` },
    { key: 'day', label: 'created within one day (16 → 15 days ago)', query: { from: day(16), to: day(15) }, where: `created_at >= '${day(16)}Z' AND created_at < '${day(15)}Z'` },
  ];
}

const POSITIONS = ['first', 'middle', 'last'] as const;
type Position = (typeof POSITIONS)[number];

const size = (quick: boolean) => Number(process.env.BENCH_DASHBOARD_ROWS ?? (quick ? 100_000 : 1_000_000));

let CASES: Case[] = [];
let pool: pg.Pool | undefined;
let dashboard: RunningDashboard | undefined;
/** Per case and position, the `below` a person reaches by paging (null: the first page). */
const starts = new Map<string, string | null>();

/**
 * Where a person lands by paging: the first page, one that starts halfway through the filter's
 * rows, and the one holding its oldest rows (below the `PAGE_SIZE`-th oldest match + 1).
 */
async function findStarts(ctx: BenchContext, c: Case): Promise<void> {
  const { rows } = await ctx.admin.query<{ n: string; mid: string | null; last: string | null }>(
    `WITH m AS (SELECT id FROM ${SCHEMA}.task WHERE ${c.where})
     SELECT (SELECT count(*) FROM m) AS n,
            (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM m)::text AS mid,
            (SELECT id FROM m ORDER BY id OFFSET ${PAGE_SIZE - 1} LIMIT 1)::text AS last`,
  );
  const r = rows[0]!;
  starts.set(`${c.key}:first`, null);
  starts.set(`${c.key}:middle`, r.mid);
  starts.set(`${c.key}:last`, r.last === null ? null : String(BigInt(r.last) + 1n));
  ctx.log(`dashboard-paging: ${c.label}: ${Number(r.n).toLocaleString('en-US')} matching rows`);
}

function pageUrl(c: Case, position: Position): string {
  const below = starts.get(`${c.key}:${position}`);
  const params = new URLSearchParams({ ...c.query, ...(below == null ? {} : { below }) });
  return new URL(`tasks?${params}`, dashboard!.url).toString();
}

/** One page over HTTP: its time in ms and how many rows it listed. */
async function timePage(url: string): Promise<{ ms: number; rows: number; ok: boolean }> {
  const t0 = process.hrtime.bigint();
  const response = await fetch(url);
  const body = await response.text();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return { ms, rows: (body.match(/<tr>\n<td><a href=/g) ?? []).length, ok: response.status === 200 };
}

async function explain(ctx: BenchContext, c: Case): Promise<void> {
  const table = taskTable(SCHEMA);
  const bounds = await ctx.admin.query<{ min: string; max: string }>(`SELECT min(id)::text AS min, max(id)::text AS max FROM ${SCHEMA}.task`);
  const below = starts.get(`${c.key}:middle`) ?? String(BigInt(bounds.rows[0]!.max) + 1n);
  // a time filter's lower bound is an id, as the list route finds it
  const floor = c.query.from === undefined ? bounds.rows[0]!.min : await leasedIdAt(ctx.admin, table, new Date(`${c.query.from}Z`));
  const filter: ListFilter = { status: (c.query.status as TaskStatus | undefined) ?? null, name: c.query.name ?? null, groupKey: c.query.group ?? null };
  const plan: string[] = [];
  // an executor that runs the statement under EXPLAIN and keeps the plan instead of the rows
  const explaining = {
    query: async (config: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      const text = typeof config === 'string' ? config : config.text;
      const result = await ctx.admin.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, typeof config === 'string' ? values : config.values);
      plan.push(...result.rows.map((r: Record<string, string>) => r['QUERY PLAN']!));
      return { rows: [] };
    },
  };
  await leasedListPage(explaining as unknown as pg.Pool, table, filter, { below, floor, limit: PAGE_SIZE });
  ctx.log(`EXPLAIN list page, ${c.label}, middle:\n${plan.join('\n')}`);
}

const METRICS: Metric[] = [
  ...cases().flatMap((c) => POSITIONS.map((p) => ({ key: `${c.key}:${p}`, label: `${c.label}, ${p} page`, unit: 'ms', target: { op: '<=', value: TARGET_MS } }) as const)),
  { key: 'overview:first', label: 'overview, first request of the round (after the list pages)', unit: 'ms', target: { op: '<=', value: OVERVIEW_TARGET_MS } },
  { key: 'overview:median', label: `overview, median of the ${OVERVIEW_REPEATS} requests after it`, unit: 'ms', target: { op: '<=', value: OVERVIEW_TARGET_MS } },
];

/** The overview: the round's first request, and the median of the ones after it. */
async function timeOverview(): Promise<{ first: number; median: number; ok: boolean }> {
  const url = new URL('.', dashboard!.url).toString();
  const first = await timePage(url);
  const rest: number[] = [];
  let ok = first.ok;
  for (let i = 0; i < OVERVIEW_REPEATS; i++) {
    const page = await timePage(url);
    rest.push(page.ms);
    ok &&= page.ok;
  }
  rest.sort((a, b) => a - b);
  return { first: first.ms, median: rest[Math.floor(rest.length / 2)]!, ok };
}

export const dashboardPaging: Workload = {
  name: 'dashboard-paging',
  description: (c) =>
    `the dashboard's task list over HTTP (pages of ${PAGE_SIZE}, newest first, keyset on id) on a table of ${size(c.quick).toLocaleString('en-US')} rows ` +
    '(BENCH_DASHBOARD_ROWS; 92.8 % done, 5 % pending, 1.5 % dead, 0.5 % processing, 0.2 % waiting; 5 names; a group key on every fifth row; 30 days of creation times): ' +
    'first, middle and last page of each filter, one request each per round after a warm-up pass; then the overview, ' +
    `${OVERVIEW_REPEATS + 1} requests in a row`,
  metrics: METRICS,
  async setup(ctx) {
    const n = size(ctx.config.quick);
    await fillTasks(ctx.admin, SCHEMA, n, ctx.log);
    CASES = cases();
    for (const c of CASES) await findStarts(ctx, c);
    // the pool `leasehold dashboard` opens (max 3), so requests share connections as there
    pool = new pg.Pool({ connectionString: ctx.url, max: 3 });
    dashboard = await startDashboard({ database: pool, schema: SCHEMA, port: 0, pageSize: PAGE_SIZE });
    // the very first overview: new connections, nothing cached by the server for its statements
    const cold = await timePage(new URL('.', dashboard.url).toString());
    ctx.log(`dashboard-paging: first overview after setup ${cold.ms.toFixed(1)} ms`);
    if (ctx.config.explain) {
      for (const c of CASES) await explain(ctx, c);
      await explainOverview(ctx, SCHEMA);
    }
  },
  async round(ctx, round): Promise<RoundResult> {
    const all = CASES;
    // a warm-up pass (prepared statements, the buffer cache), then the timed one
    for (const c of all) for (const p of POSITIONS) await timePage(pageUrl(c, p));
    const values: Record<string, number> = {};
    const rows: Record<string, number> = {};
    const bad: string[] = [];
    for (const c of all) {
      for (const p of POSITIONS) {
        const page = await timePage(pageUrl(c, p));
        values[`${c.key}:${p}`] = page.ms;
        rows[`${c.key}:${p}`] = page.rows;
        if (!page.ok) bad.push(`${c.key} ${p}: not 200`);
      }
    }
    if (round === 1) ctx.log(`dashboard-paging: rows per page ${JSON.stringify(rows)}`);
    const slowest = Math.max(...Object.values(values));
    const overview = await timeOverview();
    values['overview:first'] = overview.first;
    values['overview:median'] = overview.median;
    if (!overview.ok) bad.push('overview: not 200');
    ctx.log(`dashboard-paging round ${round}: slowest page ${slowest.toFixed(1)} ms; overview ${overview.first.toFixed(1)} ms, then median ${overview.median.toFixed(1)} ms`);
    return { values, check: bad.length ? bad.join('; ') : 'ok', details: { rows } };
  },
  async teardown(ctx) {
    await dashboard?.close();
    await pool?.end();
    dashboard = undefined;
    pool = undefined;
    starts.clear();
    await ctx.admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  },
};
