import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { eventTableRef } from './task-events.js';
import { stepTableRef } from './task-steps.js';
import { tableRef } from './table-ref.js';

/** What {@link taskForkPoint} read of the task to fork. */
export interface ForkPoint {
  readonly groupKey: string | null;
  /** The fork point's position; null when `fromStep` is not a recorded call with a position. */
  readonly position: number | null;
  /** The task's recorded calls with a position, in position order, as `name` (for the error). */
  readonly recorded: readonly string[];
  /** Children spawned before the fork point that have not ended (pending, processing, waiting). */
  readonly openChildren: readonly string[];
}

/** The task's ordering group, the position of `fromStep`, its recorded calls and its open early children; undefined when there is no such task. No locks. */
export async function taskForkPoint(executor: Executor, table: LeasedTable<unknown>, id: string, fromStep: string): Promise<ForkPoint | undefined> {
  const s = stepTableRef(table);
  const t = tableRef(table);
  const [row] = await execute<{ group_key: string | null; position: number | null; recorded: string[] | null; open_children: string[] | null }>(
    executor,
    sql`
      SELECT t.group_key,
             (SELECT p.position FROM ${s} AS p WHERE p.task_id = t.id AND p.name = ${fromStep}::text) AS position,
             (SELECT array_agg(p.name ORDER BY p.position) FROM ${s} AS p WHERE p.task_id = t.id AND p.position IS NOT NULL) AS recorded,
             (SELECT array_agg(c.id::text ORDER BY c.id) FROM ${t} AS c
              WHERE c.id IN (SELECT jsonb_array_elements_text(p.result)::bigint FROM ${s} AS p
                             WHERE p.task_id = t.id AND p.kind = 'spawn' AND jsonb_typeof(p.result) = 'array'
                               AND p.position < (SELECT f.position FROM ${s} AS f WHERE f.task_id = t.id AND f.name = ${fromStep}::text))
                AND c.status IN ('pending', 'processing', 'waiting')) AS open_children
      FROM ${t} AS t WHERE t.id = ${id}::bigint
    `,
  );
  if (row === undefined) return undefined;
  return {
    groupKey: row.group_key,
    position: row.position === null ? null : Number(row.position),
    recorded: row.recorded ?? [],
    openChildren: row.open_children ?? [],
  };
}

/**
 * Inserts the fork of task `id` at the call recorded at `position` (named `fromStep`), in one
 * statement: a new task with the original's name, payload, version, priority, attempt limit and
 * limit (`flow`, `flow_key`), pending, linked by `forked_from`; the original's records before the
 * point (position < `position`, and the patch markers recorded no later than the point's record
 * was created: see docs/workflows.md, "Forking a run"); and its progress events as the copied
 * records left them (the value of each key's last copied `event:<key>#<n>`). The original is read,
 * not changed. Returns the new task's id.
 */
export async function taskForkInsert(executor: Executor, table: LeasedTable<unknown>, id: string, fromStep: string, position: number): Promise<string> {
  const t = tableRef(table);
  const s = stepTableRef(table);
  const [row] = await execute<{ id: string }>(
    executor,
    sql`
      WITH point AS (
        SELECT p.created_at FROM ${s} AS p WHERE p.task_id = ${id}::bigint AND p.name = ${fromStep}::text
      ), fork AS (
        -- lease_version 1, not 0: the fork's first claim is then version 2, and its run reads the
        -- records copied below. A run claimed at version 1 skips the replay read (workflow-run.ts:
        -- every record is written under a lease, and a task's first claim is version 1), so at 0
        -- the fork would run every step again over its copied records.
        INSERT INTO ${t} (name, payload, priority, max_attempts, flow, flow_key, version, lease_version, forked_from)
        SELECT o.name, o.payload, o.priority, o.max_attempts, o.flow, o.flow_key, o.version, 1, o.id
        FROM ${t} AS o WHERE o.id = ${id}::bigint
        RETURNING id
      ), copied AS (
        -- written by the fork itself before its first claim: lease_version 1
        INSERT INTO ${s} (task_id, name, done, result, wake_at, lease_version, created_at, done_at, position, kind)
        SELECT fork.id, p.name, p.done, p.result, p.wake_at, 1, p.created_at, p.done_at, p.position, p.kind
        FROM fork CROSS JOIN point JOIN ${s} AS p ON p.task_id = ${id}::bigint
        WHERE p.position < ${position}::int
           OR (p.position IS NULL AND p.name LIKE 'patch:%' AND p.done_at <= point.created_at)
      ), events AS (
        INSERT INTO ${eventTableRef(table)} (task_id, key, value, lease_version, updated_at)
        SELECT DISTINCT ON (e.key) fork.id, e.key, e.result, 1, e.done_at
        FROM fork CROSS JOIN LATERAL (
          SELECT substring(p.name FROM '^event:(.*)#[0-9]+$') AS key, p.result, p.position, p.done_at
          FROM ${s} AS p
          WHERE p.task_id = ${id}::bigint AND p.kind = 'event' AND p.position < ${position}::int AND p.result IS NOT NULL
        ) AS e
        WHERE e.key IS NOT NULL
        ORDER BY e.key, e.position DESC
      )
      SELECT id FROM fork
    `,
  );
  if (row === undefined) throw new Error(`fork: task ${id} vanished while being forked`);
  return String(row.id);
}
