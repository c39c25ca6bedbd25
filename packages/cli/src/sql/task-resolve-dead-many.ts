import { execute, type Executor, type LeasedTable, type TaskStatus } from '@leasehold/core';
import { sql } from 'kysely';

/** What happened to each id given to {@link taskResolveDeadMany}. */
export interface ResolvedRow {
  readonly id: string;
  /** Whether the row was dead and has been changed. */
  readonly changed: boolean;
  /** For an unchanged id: its status (null = no such row). */
  readonly status: TaskStatus | null;
}

/**
 * Resolves dead tasks, as a person decided: `retry` makes them pending, due now, with
 * `attempts` reset to 0; `skip` marks them done without running them (which unblocks an
 * ordered group). Only rows still `dead` change (guarded in the WHERE, so two operators
 * resolving the same id change it once). The decision is appended to `last_error`, so the next
 * person sees it: core's task table has no column of its own for it. `lease_version` is left
 * alone: the fencing token never goes back. Locks the changed rows until the transaction ends.
 */
export async function taskResolveDeadMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  action: 'retry' | 'skip',
  ids: readonly string[],
  reason: string,
): Promise<ResolvedRow[]> {
  const t = sql.id(table.schema, table.table);
  const note = `${action === 'retry' ? 'retried' : 'skipped'} by a person: ${reason}`;
  const set =
    action === 'retry'
      ? sql`status = 'pending', attempts = 0, available_at = now()`
      : sql`status = 'done', done_at = now()`;
  const rows = await execute<{ id: string; changed: boolean; status: TaskStatus | null }>(
    executor,
    sql`
      WITH wanted AS (SELECT DISTINCT unnest(${[...ids]}::bigint[]) AS id),
      changed AS (
        UPDATE ${t} AS t
        SET ${set}, last_error = concat_ws(E'\n', t.last_error, ${note}::text)
        FROM wanted WHERE t.id = wanted.id AND t.status = 'dead'
        RETURNING t.id
      )
      -- cur comes from the statement's snapshot: for unchanged ids, the status that refused them
      SELECT w.id, (c.id IS NOT NULL) AS changed, cur.status
      FROM wanted AS w LEFT JOIN changed AS c ON c.id = w.id LEFT JOIN ${t} AS cur ON cur.id = w.id
      ORDER BY w.id
    `,
  );
  return rows.map((r) => ({ id: String(r.id), changed: r.changed, status: r.changed ? null : (r.status ?? null) }));
}
