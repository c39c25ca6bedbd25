import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';
import { unfinishedRows } from './unfinished-sources.js';
import { ageMs, waitingSince } from './waiting-since.js';
import { workerTableRef } from './task-worker-list.js';

/** The unfinished runs of one task name at one version (core migration 11's `task.version`). */
export interface TaskVersionRow {
  /** Task name. */
  readonly name: string;
  /** The oldest code version that can run these runs. */
  readonly version: number;
  readonly pending: number;
  readonly processing: number;
  /** Parked: sleeping, or waiting for children or a signal. */
  readonly waiting: number;
  /** Age of the oldest of these runs, from its creation, in ms by the database's clock. */
  readonly oldestAgeMs: number;
  /** How long the longest-waiting pending or processing one has waited to run (as `queueStats` counts it); null when none waits. */
  readonly oldestPendingAgeMs: number | null;
  /**
   * Live workers whose definition of this name accepts this version: 0 when none can claim these
   * runs. Null when no live worker reports what it accepts (workers from before core migration 11
   * report nothing), so that acceptance is unknown rather than "none".
   */
  readonly acceptedBy: number | null;
  /**
   * Live workers that run this task name at all, whatever version: 0 when no live worker has it
   * among its tasks (a worker not deployed, or a name misspelt in `defineTask` or in the
   * enqueuer), so these runs wait without a word from any worker. Null like `acceptedBy`.
   */
  readonly servedBy: number | null;
}

/**
 * Unfinished runs per task name and version, read from the partial indexes of unfinished rows
 * (see `unfinishedSources`), with how many live workers — a `task_worker` row seen within
 * `liveWithinMs` — accept each (null while none is live). Takes no locks; one statement, so one
 * snapshot.
 */
export async function taskVersionCounts(executor: Executor, table: LeasedTable<unknown>, liveWithinMs: number): Promise<TaskVersionRow[]> {
  const rows = await execute<{
    name: string; version: number; pending: string; processing: string; waiting: string;
    oldest_ms: number; pending_ms: number | null; accepted_by: number | null; served_by: number | null;
  }>(
    executor,
    sql`
      WITH open AS (
        SELECT name, version,
               count(*) FILTER (WHERE status = 'pending') AS pending,
               count(*) FILTER (WHERE status = 'processing') AS processing,
               count(*) FILTER (WHERE status = 'waiting') AS waiting,
               min(created_at) AS oldest,
               ${waitingSince()} AS pending_since
        FROM (${unfinishedRows(tableRef(table), sql`name, version, status, attempts, available_at, created_at`)}) AS u
        GROUP BY 1, 2
      ),
      -- accepts: {"<name>": [versions…]}, one row per live worker and name and version it accepts;
      -- joined rather than probed per group, whose estimated cost alone set off JIT (300 ms here)
      live AS MATERIALIZED (
        SELECT accepts FROM ${workerTableRef(table)} WHERE seen_at > now() - ${liveWithinMs}::float8 * interval '1 millisecond'
      ),
      accepted AS (
        SELECT a.name, v.version::int AS version, count(*)::int AS workers
        FROM live AS w
          CROSS JOIN LATERAL jsonb_each(w.accepts) AS a(name, versions)
          CROSS JOIN LATERAL jsonb_array_elements_text(a.versions) AS v(version)
        GROUP BY 1, 2
      ),
      -- the names each live worker runs, at any version
      served AS (
        SELECT s.name, count(*)::int AS workers FROM live AS w CROSS JOIN LATERAL jsonb_object_keys(w.accepts) AS s(name) GROUP BY 1
      )
      SELECT o.name, o.version, o.pending, o.processing, o.waiting,
             ${ageMs(sql`o.oldest`)} AS oldest_ms, ${ageMs(sql`o.pending_since`)} AS pending_ms,
             CASE WHEN EXISTS (SELECT 1 FROM live) THEN coalesce(a.workers, 0) END AS accepted_by,
             CASE WHEN EXISTS (SELECT 1 FROM live) THEN coalesce(s.workers, 0) END AS served_by
      FROM open AS o LEFT JOIN accepted AS a ON a.name = o.name AND a.version = o.version
        LEFT JOIN served AS s ON s.name = o.name
      ORDER BY o.name, o.version
    `,
  );
  return rows.map((r) => ({
    name: r.name,
    version: r.version,
    pending: Number(r.pending),
    processing: Number(r.processing),
    waiting: Number(r.waiting),
    oldestAgeMs: Math.max(0, Math.round(Number(r.oldest_ms))),
    oldestPendingAgeMs: r.pending_ms === null ? null : Math.max(0, Math.round(Number(r.pending_ms))),
    acceptedBy: r.accepted_by,
    servedBy: r.served_by,
  }));
}
