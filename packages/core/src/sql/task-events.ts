import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { LeaseToken } from '../primitives.js';
import { execute, type Executor } from './execute.js';
import { fence } from './fence.js';
import { stepTableRef, type RecordPlace } from './task-steps.js';
import { tableRef } from './table-ref.js';

/** `"schema"."<table>_event"`: the progress events of a task table's rows (core migration 15). */
export function eventTableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, `${table.table}_event`);
}

/**
 * Records a `ctx.setEvent` call and sets the event, with the fence, in one statement: the task's
 * row is locked at its token, the call is recorded in the steps under `name` (its value as the
 * result), and only when that record is new is the task's `key` set to the value (last write
 * wins; the table's trigger notifies `<schema>.task:event`). False, writing nothing, when the
 * lease moved on or the task left `processing`.
 */
export async function taskEventSet(
  executor: Executor,
  table: LeasedTable<unknown>,
  token: LeaseToken,
  name: string,
  key: string,
  valueJson: string,
  place: RecordPlace,
): Promise<boolean> {
  const rows = await execute<{ fenced: boolean }>(
    executor,
    sql`
      WITH f AS (
        SELECT t.id FROM ${tableRef(table)} AS t WHERE ${fence('t', token.id, token.leaseVersion)} FOR NO KEY UPDATE
      ), s AS (
        INSERT INTO ${stepTableRef(table)} AS s (task_id, name, done, result, lease_version, done_at, position, kind)
        SELECT f.id, ${name}::text, true, ${valueJson}::jsonb, ${token.leaseVersion}::bigint, now(), ${place.position}::int, ${place.kind}::text FROM f
        ON CONFLICT (task_id, name) DO NOTHING
        RETURNING s.task_id
      ), e AS (
        INSERT INTO ${eventTableRef(table)} AS e (task_id, key, value, lease_version, updated_at)
        SELECT s.task_id, ${key}::text, ${valueJson}::jsonb, ${token.leaseVersion}::bigint, now() FROM s
        ON CONFLICT (task_id, key) DO UPDATE
          SET value = excluded.value, lease_version = excluded.lease_version, updated_at = excluded.updated_at
        RETURNING e.task_id
      )
      -- e is written whatever the query reads (a data-modifying CTE always runs)
      SELECT EXISTS (SELECT 1 FROM f) AS fenced
    `,
  );
  return rows[0]?.fenced === true;
}

/** What {@link taskEventRead} found. */
export type EventRead = { readonly task: false } | { readonly task: true; readonly set: false } | { readonly task: true; readonly set: true; readonly value: unknown };

/** The task's event `key`: whether the task exists, and the value when set. No locks. */
export async function taskEventRead(executor: Executor, table: LeasedTable<unknown>, id: string, key: string): Promise<EventRead> {
  const [row] = await execute<{ set: boolean; value: unknown }>(
    executor,
    sql`
      SELECT e.task_id IS NOT NULL AS set, e.value
      FROM ${tableRef(table)} AS t LEFT JOIN ${eventTableRef(table)} AS e ON e.task_id = t.id AND e.key = ${key}::text
      WHERE t.id = ${id}::bigint
    `,
  );
  if (row === undefined) return { task: false };
  return row.set ? { task: true, set: true, value: row.value } : { task: true, set: false };
}
