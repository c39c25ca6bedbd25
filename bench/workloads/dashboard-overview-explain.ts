// `--explain` for the dashboard's overview: one overview request served by a dashboard whose pool
// runs every read under EXPLAIN (ANALYZE, BUFFERS) first, on the same connection (so inside the
// overview's own transaction and its SET LOCALs), and prints the plans. The statements are the
// dashboard's own, as the route sends them, not copies that could drift.
import { startDashboard } from '@leasehold/dashboard';
import pg from 'pg';
import type { BenchContext } from '../lib/workload.js';

type QueryConfig = string | { readonly text: string; readonly values?: unknown[] };
type Queryable = { query(config: QueryConfig, values?: unknown[]): Promise<pg.QueryResult> };

/** `target.query`, but each SELECT (or WITH) is explained first and its plan kept. */
function explainingQuery(target: Queryable, plans: string[]): Queryable['query'] {
  return async (config, values) => {
    const text = typeof config === 'string' ? config : config.text;
    const params = typeof config === 'string' ? values : config.values;
    if (/^\s*(WITH|SELECT)\b/i.test(text)) {
      const result = await target.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
      plans.push(`${text.trim().replace(/\s+/g, ' ').slice(0, 100)} …\n${result.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')}`);
    }
    return target.query(config, values);
  };
}

/** A proxy of `object` whose `query` is {@link explainingQuery}, its other members its own. */
function withExplainingQuery<T extends object>(object: T, plans: string[], extra: Partial<Record<PropertyKey, unknown>> = {}): T {
  const query = explainingQuery(object as unknown as Queryable, plans);
  return new Proxy(object, {
    get(target, property) {
      if (property === 'query') return query;
      if (property in extra) return extra[property];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Prints the plan of every statement one overview request sends, on the table in `schema`. */
export async function explainOverview(ctx: BenchContext, schema: string): Promise<void> {
  const plans: string[] = [];
  const pool = new pg.Pool({ connectionString: ctx.url, max: 3 });
  const connect = async () => withExplainingQuery(await pool.connect(), plans);
  const dashboard = await startDashboard({ database: withExplainingQuery(pool, plans, { connect }), schema, port: 0 });
  try {
    const response = await fetch(dashboard.url);
    await response.text();
    ctx.log(`EXPLAIN overview (${plans.length} statements):\n${plans.join('\n\n')}`);
  } finally {
    await dashboard.close();
    await pool.end();
  }
}
