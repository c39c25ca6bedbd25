import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';
import { stepTableRef } from './task-steps.js';
import { unfinishedRows } from './unfinished-sources.js';

/** How the unfinished runs of one task stand with one patch (`ctx.patched(id)`). */
export interface PatchUsageRow {
  /** Task name. */
  readonly task: string;
  /** The patch id, as given to `ctx.patched`. */
  readonly patch: string;
  /** Unfinished runs that recorded it `true`: they took the new path. */
  readonly newPath: number;
  /** Unfinished runs that recorded it `false`: they took the old path and need the old branch. */
  readonly oldPath: number;
  /**
   * Unfinished runs with no marker yet that were created before {@link PatchUsageRow.firstNewAt}
   * (all of them when it is null): they may have gone past that point on old code and would then
   * take the old path, so they count as needing the old branch too.
   */
  readonly undecided: number;
  /** When the earliest unfinished run recorded it `true`; null when none did. */
  readonly firstNewAt: Date | null;
}

/** Which patches {@link patchUsageCounts} reads. */
export interface PatchFilter {
  readonly task: string | undefined;
  readonly patch: string | undefined;
}

/**
 * Patch markers (`patch:<id>` steps of kind 'patch', core migration 11) of the unfinished runs,
 * per task and patch. Reads the unfinished rows from their partial indexes and each one's
 * markers from the steps' primary key, so the cost follows the unfinished runs, not the history.
 * With both `task` and `patch` given, the pair is reported even when no unfinished run recorded
 * it. Takes no locks; one statement, so one snapshot.
 */
export async function patchUsageCounts(executor: Executor, table: LeasedTable<unknown>, filter: PatchFilter): Promise<PatchUsageRow[]> {
  const steps = stepTableRef(table);
  const onlyTask = filter.task === undefined ? sql`true` : sql`name = ${filter.task}::text`;
  const onlyPatch = filter.patch === undefined ? sql`true` : sql`s.name = ${`patch:${filter.patch}`}::text`;
  // the pair asked for by name, when no unfinished run recorded it
  const asked = filter.task !== undefined && filter.patch !== undefined
    ? sql`UNION ALL SELECT ${filter.task}::text, ${filter.patch}::text, 0, 0, NULL WHERE NOT EXISTS (SELECT 1 FROM marker)`
    : sql``;
  const rows = await execute<{ task: string; patch: string; new_path: string; old_path: string; undecided: string; first_new_at: Date | null }>(
    executor,
    sql`
      WITH open AS MATERIALIZED (
        SELECT * FROM (${unfinishedRows(tableRef(table), sql`id, name, created_at`, onlyTask)}) AS u
      ),
      marker AS MATERIALIZED (
        SELECT o.name AS task, o.created_at AS run_created_at, substr(s.name, 7) AS patch,
               s.result = 'true'::jsonb AS new_path, s.created_at
        FROM ${steps} AS s JOIN open AS o ON o.id = s.task_id
        -- the unfinished runs' markers by the steps' primary key: a join by hash would read every
        -- marker the table keeps, finished runs' too, and a lookup per run (LATERAL) was estimated
        -- so high that JIT compiled the statement for longer than it ran
        WHERE s.task_id = ANY (ARRAY(SELECT id FROM open)) AND ${onlyPatch} AND s.kind = 'patch'
      ),
      pair AS MATERIALIZED (
        SELECT task, patch,
               count(*) FILTER (WHERE new_path) AS new_path,
               count(*) FILTER (WHERE NOT new_path) AS old_path,
               min(created_at) FILTER (WHERE new_path) AS first_new_at
        FROM marker GROUP BY 1, 2
        ${asked}
      ),
      -- undecided: the task's runs created before the patch was first taken (all, if never),
      -- less those of them that recorded it; counted apart, so no join depends on an estimate
      before AS (
        SELECT p.task, p.patch, count(o.*) AS runs
        FROM pair AS p LEFT JOIN open AS o ON o.name = p.task AND o.created_at < coalesce(p.first_new_at, 'infinity')
        GROUP BY 1, 2
      ),
      marked_before AS (
        SELECT p.task, p.patch, count(*) AS runs
        FROM pair AS p JOIN marker AS m ON m.task = p.task AND m.patch = p.patch
        WHERE m.run_created_at < coalesce(p.first_new_at, 'infinity')
        GROUP BY 1, 2
      )
      SELECT p.task, p.patch, p.new_path, p.old_path, p.first_new_at, b.runs - coalesce(mb.runs, 0) AS undecided
      FROM pair AS p
        JOIN before AS b ON b.task = p.task AND b.patch = p.patch
        LEFT JOIN marked_before AS mb ON mb.task = p.task AND mb.patch = p.patch
      ORDER BY p.task, p.patch
    `,
  );
  return rows.map((r) => ({
    task: r.task,
    patch: r.patch,
    newPath: Number(r.new_path),
    oldPath: Number(r.old_path),
    undecided: Number(r.undecided),
    firstNewAt: r.first_new_at,
  }));
}
