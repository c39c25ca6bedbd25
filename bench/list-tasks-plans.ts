// What a page of listTasks costs on a big task table (issue 33, item 1): for each filter, the
// plan of the page's statement (EXPLAIN ANALYZE, BUFFERS) and the median time of the call, for the
// first page and for a page from the middle of the table. A measurement, not a test.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/list-tasks-plans.ts
// Builds a schema of its own (list_plans_<pid>) with LIST_ROWS rows (1,000,000 by default):
// 20 names with a skew plus a rare one (1 row in 10,000), 90% done, 5% pending, 2% dead and 1%
// each waiting, cancelled and processing (LIST_PROCESSING: fewer in flight, the rest done); a parent with 10,000 children and 20,000 parents of one
// child; one row a second. Dropped at the end unless LIST_KEEP=1.
import pg from 'pg';
import { listTasks, migrate, type TaskListFilter } from '@leasehold/core';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `list_plans_${process.pid}`;
const ROWS = Number(process.env.LIST_ROWS ?? 1_000_000);
const IN_FLIGHT = Number(process.env.LIST_PROCESSING ?? ROWS / 100);
const RUNS = 15;

const pool = new pg.Pool({ connectionString: url, max: 2 });
const plans: string[] = [];
/** A pg executor that answers each statement with its EXPLAIN ANALYZE as well (kept in `plans`). */
const explaining = {
  async query(textOrConfig: string | { text: string; values: unknown[] }, values?: unknown[]) {
    const text = typeof textOrConfig === 'string' ? textOrConfig : textOrConfig.text;
    const args = typeof textOrConfig === 'string' ? values : textOrConfig.values;
    const plan = await pool.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, args);
    plans.push(plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n'));
    return pool.query(text, args);
  },
};

try {
  const t0 = performance.now();
  await migrate(pool, { schema });
  await pool.query(`
    INSERT INTO ${schema}.task (name, status, created_at, available_at, done_at, parent_id)
    SELECT CASE WHEN g % 10000 = 7 THEN 'rare' ELSE 'job-' || lpad((floor(pow(random(), 2) * 20))::int::text, 2, '0') END,
           CASE WHEN g % 100 < 90 THEN 'done' WHEN g % 100 < 95 THEN 'pending' WHEN g % 100 < 97 THEN 'dead'
                WHEN g % 100 = 97 THEN 'waiting' WHEN g % 100 = 98 THEN 'cancelled'
                WHEN (g / 100) % $2::int = 0 THEN 'processing' ELSE 'done' END,
           now() - make_interval(secs => $1::int - g), now(), CASE WHEN g % 100 < 90 THEN now() END,
           CASE WHEN g BETWEEN $1::int / 2 + 1 AND $1::int / 2 + 10000 THEN ($1::int / 2)::bigint
                WHEN g % 50 = 1 AND g > 1000 THEN (g / 1000) * 1000 END
    FROM generate_series(1, $1::int) AS g`, [ROWS, Math.max(1, Math.round(ROWS / 100 / IN_FLIGHT))]);
  await pool.query(`VACUUM ANALYZE ${schema}.task`);
  console.log(`built ${ROWS} rows (${IN_FLIGHT} processing) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const at = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000);
  const middle = `t${Math.floor(ROWS / 2)}`;
  const cases: [string, TaskListFilter][] = [
    ['none', {}],
    ['status processing', { status: 'processing' }],
    ['name (common)', { name: 'job-00' }],
    ['name (rare)', { name: 'rare' }],
    ['names (2)', { name: ['job-03', 'rare'] }],
    ['status done', { status: 'done' }],
    ['status pending', { status: 'pending' }],
    ['status dead+waiting', { status: ['dead', 'waiting'] }],
    ['name (rare) + status cancelled', { name: 'rare', status: 'cancelled' }],
    ['name + status processing', { name: 'job-00', status: 'processing' }],
    ['parent (10,000 children)', { parent: String(Math.floor(ROWS / 2)) }],
    ['parent + status dead', { parent: String(Math.floor(ROWS / 2)), status: 'dead' }],
    ['created last hour', { createdAfter: at(3600) }],
    ['created a day, 2 days ago + name', { createdAfter: at(2 * 86400), createdBefore: at(86400), name: 'job-05' }],
    ['created last hour + status dead', { createdAfter: at(3600), status: 'dead' }],
    ['created last 10 days + status dead', { createdAfter: at(864_000), status: 'dead' }],
    ['created before 10 days ago + name + status done', { createdBefore: at(864_000), name: 'job-01', status: 'done' }],
    ['created since 11 days + names (2) + status pending', { createdAfter: at(950_400), name: ['job-01', 'job-02'], status: 'pending' }],
  ];
  console.log('| filter | page | rows | median ms | plan (main nodes) |');
  console.log('|---|---|---:|---:|---|');
  for (const [label, filter] of cases) {
    for (const [page, after] of [['first', undefined], ['middle', middle]] as const) {
      const times: number[] = [];
      let rows = 0;
      for (let i = 0; i < RUNS; i++) {
        const s = performance.now();
        rows = (await listTasks(pool, filter, { schema, limit: 50, after })).tasks.length;
        times.push(performance.now() - s);
      }
      times.sort((a, b) => a - b);
      plans.length = 0;
      await listTasks(explaining, filter, { schema, limit: 50, after });
      const page0 = plans.at(-1) ?? '';
      const nodes = [...new Set(page0.split('\n').map((l) => /(Index Only Scan|Index Scan|Seq Scan|Bitmap Heap Scan)[^(]*? on (\w+)(?: \w+)?/.exec(l)?.[0]).filter((n) => n !== undefined))];
      const exec = /Execution Time: ([\d.]+)/.exec(page0)?.[1];
      console.log(`| ${label} | ${page} | ${rows} | ${times[RUNS >> 1]!.toFixed(2)} | ${nodes.join('; ').replaceAll(`${schema}.`, '')} (EXPLAIN ${exec} ms) |`);
      if (process.env.LIST_PLANS === '1') console.log(plans.join('\n\n'));
    }
  }
} finally {
  if (process.env.LIST_KEEP !== '1') await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
}
