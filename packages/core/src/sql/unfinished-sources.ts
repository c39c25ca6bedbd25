import { sql, type RawBuilder } from 'kysely';

/**
 * Conditions that together select every unfinished row of core's task table (pending,
 * processing, waiting) exactly once, each spelled as the predicate of a partial index so the
 * planner can answer it from that index alone: reads follow the unfinished rows, never the
 * finished ones the table keeps. A pending row is blocked, or not and then due now or scheduled,
 * under a limit or not (core migrations 3 and 7); a waiting one wakes at a time (`task_waiting`)
 * or by an event.
 *
 * The last condition, a wait that only an event ends (children, a signal without a timeout), has
 * no index in core migrations 1–11: PostgreSQL then answers it with a scan of the table (1,000,000
 * rows read for 10,000 such runs). An index whose predicate covers it, e.g. `(id) WHERE status =
 * 'waiting'`, makes it follow those rows too.
 */
export function unfinishedSources(): readonly RawBuilder<unknown>[] {
  return [
    sql`status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NULL`,
    sql`status = 'pending' AND scheduled AND NOT blocked AND flow IS NULL`,
    sql`status = 'pending' AND NOT blocked AND NOT scheduled AND flow IS NOT NULL`,
    sql`status = 'pending' AND scheduled AND NOT blocked AND flow IS NOT NULL`,
    sql`blocked AND status = 'pending'`,
    sql`status = 'processing'`,
    sql`status = 'waiting' AND scheduled`,
    sql`status = 'waiting' AND NOT scheduled`,
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
