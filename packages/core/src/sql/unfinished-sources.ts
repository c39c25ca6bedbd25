import { sql, type RawBuilder } from 'kysely';

/**
 * Conditions that together select every unfinished row of core's task table (pending,
 * processing, waiting) exactly once, each spelled as the predicate of a partial index so the
 * planner can answer it from that index alone: reads follow the unfinished rows, never the
 * finished ones the table keeps. A pending row is blocked, or not and then due now or scheduled,
 * under a limit or not (core migrations 3 and 7); a waiting one is in `task_parked` (core
 * migration 12; before it, a wait that only an event ends had no index and its branch read the
 * whole table: 1,000,000 rows for 10,000 such runs). `leaseStats`' live rows follow the same
 * indexes, with the dead rows and without the versions.
 */
export function unfinishedSources(): readonly RawBuilder<unknown>[] {
  return [
    sql`status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NULL`,
    sql`status = 'pending' AND scheduled AND NOT blocked AND flow IS NULL`,
    sql`status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NOT NULL`,
    sql`status = 'pending' AND scheduled AND NOT blocked AND flow IS NOT NULL`,
    sql`blocked AND status = 'pending'`,
    sql`status = 'processing'`,
    sql`status = 'waiting'`,
  ];
}

/**
 * `SELECT <columns> FROM <table> WHERE <source> [AND <extra>]` once per {@link unfinishedSources}
 * condition, joined with `UNION ALL`: a derived table of the unfinished rows.
 */
export function unfinishedRows(
  table: RawBuilder<unknown>,
  columns: RawBuilder<unknown>,
  extra: RawBuilder<unknown> = sql`true`,
): RawBuilder<unknown> {
  return sql.join(
    unfinishedSources().map((where) => sql`SELECT ${columns} FROM ${table} WHERE ${where} AND ${extra}`),
    sql` UNION ALL `,
  );
}
