import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { TaskStatus } from '../task-status.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/** A task as `listTasks` lists it: its state, without payload, result or steps (`getTask` reads those). */
export interface TaskSummary {
  readonly id: string;
  readonly name: string;
  readonly status: TaskStatus;
  readonly attempts: number;
  readonly maxAttempts: number;
  /** The task that spawned it (`ctx.spawn`), or null. */
  readonly parentId: string | null;
  readonly groupKey: string | null;
  /** What a waiting task waits for: `sleep`, `children` or `signal:<name>`; null otherwise. */
  readonly waitFor: string | null;
  readonly createdAt: Date;
  readonly availableAt: Date;
  readonly doneAt: Date | null;
  /** The first 300 characters of its last error, or null. */
  readonly lastError: string | null;
  readonly version: number;
}

/** What one page of {@link taskListPage} selects; ids are decimal strings. */
export interface TaskListQuery {
  /** Null: any name. */
  readonly names: readonly string[] | null;
  /** Null: any status. */
  readonly statuses: readonly TaskStatus[] | null;
  readonly parentId: string | null;
  readonly createdAfter: Date | null;
  readonly createdBefore: Date | null;
  /** Exclusive upper id (the previous page's last id); null: from the newest. */
  readonly below: string | null;
  /** Inclusive lower id; null: to the oldest. */
  readonly floor: string | null;
  readonly limit: number;
}

const COLUMNS = sql.raw(`id, name, status, attempts, max_attempts, parent_id, group_key, wait_for, created_at, available_at,
  done_at, left(last_error, 300) AS last_error, version`);

const ALL_STATUSES: readonly TaskStatus[] = ['pending', 'processing', 'waiting', 'done', 'dead', 'cancelled'];

/**
 * One page of tasks, newest first (by id, never OFFSET), `limit + 1` rows at most so the caller
 * knows whether another page follows. Each page is bounded by its limit whatever the table holds:
 * - by parent: `<table>_children` (parent_id, id), walked backwards; other filters are checked on
 *   the parent's children (the status under "C", so that no partial index of a status, which
 *   would hold every such row of the table, is taken instead);
 * - by name or status: one backward range of `<table>_name_status` (name, status, id) for each
 *   (name, status) pair, `limit + 1` entries at most each, merged; without names, the table's
 *   names are enumerated first by a loose scan of the same index (one probe per distinct name).
 *   That index leaves out the rows in flight (so claims and heartbeats do not write to it):
 *   `processing` rows are read whole from `<table>_leased`, as many as the fleet runs at once;
 * - otherwise: the primary key, backwards.
 * Time bounds arrive as id bounds ({@link taskIdAt}) and are also checked exactly on each row.
 * Names and statuses are parameters, compared so that no partial index is taken. Takes no locks.
 */
export async function taskListPage(executor: Executor, table: LeasedTable<unknown>, q: TaskListQuery): Promise<TaskSummary[]> {
  const t = tableRef(table);
  const take = q.limit + 1;
  const range = (alias: string) => {
    const c = (column: string) => sql.ref(`${alias}.${column}`);
    const parts: RawBuilder<unknown>[] = [];
    if (q.below !== null) parts.push(sql`AND ${c('id')} < ${q.below}::bigint`);
    if (q.floor !== null) parts.push(sql`AND ${c('id')} >= ${q.floor}::bigint`);
    if (q.createdAfter !== null) parts.push(sql`AND ${c('created_at')} >= ${q.createdAfter}::timestamptz`);
    if (q.createdBefore !== null) parts.push(sql`AND ${c('created_at')} < ${q.createdBefore}::timestamptz`);
    return sql.join(parts, sql` `);
  };
  let statement: RawBuilder<Record<string, unknown>>;
  if (q.parentId !== null) {
    const names = q.names === null ? sql`` : sql`AND p.name = ANY(${q.names}::text[])`;
    const statuses = q.statuses === null ? sql`` : sql`AND (p.status COLLATE "C") = ANY(${q.statuses}::text[])`;
    statement = sql`
      SELECT ${COLUMNS} FROM ${t} AS p
      WHERE p.parent_id = ${q.parentId}::bigint ${names} ${statuses} ${range('p')}
      ORDER BY p.id DESC LIMIT ${take}
    `;
  } else if (q.names !== null || q.statuses !== null) {
    const statuses = q.statuses ?? ALL_STATUSES;
    const indexed = statuses.filter((s) => s !== 'processing');
    const parts: RawBuilder<unknown>[] = [];
    if (indexed.length > 0) {
      // `status <> 'processing'` written out, so that the planner may take the partial index
      const names = q.names === null
        ? sql`
            WITH RECURSIVE names (name) AS (
              (SELECT a.name FROM ${t} AS a WHERE a.status <> 'processing' ORDER BY a.name LIMIT 1)
              UNION ALL
              SELECT (SELECT b.name FROM ${t} AS b WHERE b.status <> 'processing' AND b.name > n.name ORDER BY b.name LIMIT 1)
              FROM names AS n WHERE n.name IS NOT NULL
            )
            SELECT name FROM names WHERE name IS NOT NULL`
        : sql`SELECT unnest(${q.names}::text[]) AS name`;
      parts.push(sql`
        SELECT x.id
        FROM (${names}) AS n
        CROSS JOIN unnest(${indexed}::text[]) AS s (status)
        CROSS JOIN LATERAL (
          SELECT r.id FROM ${t} AS r
          WHERE r.name = n.name AND r.status = s.status AND r.status <> 'processing' ${range('r')}
          ORDER BY r.id DESC LIMIT ${take}
        ) AS x
      `);
    }
    if (indexed.length < statuses.length) {
      // the rows in flight, read whole from <table>_leased (a materialised CTE, so that the
      // page's ORDER BY … LIMIT cannot turn it into a backward walk of the primary key)
      const names = q.names === null ? sql`` : sql`AND c.name = ANY(${q.names}::text[])`;
      parts.push(sql`SELECT c.id FROM leased AS c WHERE true ${names} ${range('c')}`);
    }
    const leased = indexed.length < statuses.length
      ? sql`WITH leased AS MATERIALIZED (SELECT id, name, created_at FROM ${t} WHERE status = 'processing') `
      : sql``;
    statement = sql`
      ${leased}SELECT ${COLUMNS} FROM ${t}
      WHERE id = ANY(ARRAY(
        SELECT u.id FROM (${sql.join(parts, sql` UNION ALL `)}) AS u
        ORDER BY u.id DESC LIMIT ${take}
      ))
      ORDER BY id DESC
    `;
  } else {
    statement = sql`SELECT ${COLUMNS} FROM ${t} AS p WHERE true ${range('p')} ORDER BY p.id DESC LIMIT ${take}`;
  }
  const rows = await execute<Record<string, unknown>>(executor, statement);
  return rows.map(toSummary);
}

function toSummary(r: Record<string, unknown>): TaskSummary {
  return {
    id: String(r.id),
    name: r.name as string,
    status: r.status as TaskStatus,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    parentId: r.parent_id === null ? null : String(r.parent_id),
    groupKey: (r.group_key as string | null) ?? null,
    waitFor: (r.wait_for as string | null) ?? null,
    createdAt: r.created_at as Date,
    availableAt: r.available_at as Date,
    doneAt: (r.done_at as Date | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    version: Number(r.version),
  };
}

/**
 * The first id whose row was created at or after `at`, or the highest id + 1 when none was (null
 * for an empty table). Ids grow with `created_at` (both are drawn as a row is inserted), so this
 * is a binary search over the primary key, about 20 probes for a million rows. A row whose
 * inserting transaction ran across `at` can land on the other side (its `created_at` is its
 * transaction's start). Takes no locks.
 */
export async function taskIdAt(executor: Executor, table: LeasedTable<unknown>, at: Date): Promise<string | null> {
  const t = tableRef(table);
  const [row] = await execute<{ id: string | null }>(
    executor,
    sql`
      -- invariant: every row with id < lo was created before at, every row with id >= hi at or after it
      WITH RECURSIVE search (lo, hi, step) AS (
        SELECT (SELECT min(id) FROM ${t}), (SELECT max(id) FROM ${t}) + 1, 0
        UNION ALL
        SELECT CASE WHEN m.id < s.hi AND m.created_at < ${at}::timestamptz THEN m.id + 1 ELSE s.lo END,
               CASE WHEN m.id IS NULL OR m.id >= s.hi THEN (s.lo + s.hi) / 2 -- no row in [mid, hi)
                    WHEN m.created_at < ${at}::timestamptz THEN s.hi
                    ELSE m.id END,
               s.step + 1
        FROM search AS s
        LEFT JOIN LATERAL (
          SELECT r.id, r.created_at FROM ${t} AS r WHERE r.id >= (s.lo + s.hi) / 2 ORDER BY r.id LIMIT 1
        ) AS m ON true
        WHERE s.lo < s.hi AND s.step < 128
      )
      SELECT hi::text AS id FROM search ORDER BY step DESC LIMIT 1
    `,
  );
  return row?.id ?? null;
}
