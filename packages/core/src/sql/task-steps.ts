import { sql, type RawBuilder } from 'kysely';
import type { RecordKind } from '../errors.js';
import type { LeasedTable } from '../leased-table.js';
import type { LeaseToken } from '../primitives.js';
import { execute, executeCached, type Executor } from './execute.js';
import { byPrimaryKey, fence } from './fence.js';
import { tableRef } from './table-ref.js';

/** A step as recorded (core migration 8's `task_step`). */
export interface RecordedStep {
  /** False for a sleep or wait still under way (it has a `wake_at`). */
  readonly done: boolean;
  /** The parsed JSON result; undefined when the step returned nothing (SQL NULL). */
  readonly result: unknown;
  /** Its place in the run's calls (core migration 11); null for a patch marker, or a step recorded before. */
  readonly position: number | null;
  /** What recorded it; null for a step recorded before core migration 11. */
  readonly kind: RecordKind | null;
}

/** Where and as what a call is recorded (core migration 11). */
export interface RecordPlace {
  /** Its place in the run's calls; null for a patch marker. */
  readonly position: number | null;
  readonly kind: RecordKind;
}

/** `"schema"."<table>_step"`: the steps of a task table's rows. */
export function stepTableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, `${table.table}_step`);
}

/** `"schema"."<table>_signal"`: signals sent to a task table's rows. */
export function signalTableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, `${table.table}_signal`);
}

/**
 * Every step each of the given runs has recorded, by task id and then by name, in one statement.
 * A sleep of a run whose wake time has passed is recorded done on the way, under the run's token
 * (its row still `processing` at that version): the run was claimed because the sleep ended, so
 * its replay goes on past it without a write of its own. No locks: the task rows are read, not
 * locked, since closing a due sleep is the same fact whoever records it.
 */
export async function taskStepsReadMany(executor: Executor, table: LeasedTable<unknown>, tokens: readonly LeaseToken[]): Promise<Map<string, Map<string, RecordedStep>>> {
  const s = stepTableRef(table);
  const rows = await execute<{ task_id: string; name: string; done: boolean; result: unknown; nothing: boolean; position: number | null; kind: RecordKind | null }>(
    executor,
    sql`
      WITH input AS (
        SELECT * FROM unnest(${tokens.map((t) => t.id)}::bigint[], ${tokens.map((t) => t.leaseVersion)}::bigint[]) AS u(id, version)
      ), f AS (
        SELECT l.id, l.lease_version FROM ${tableRef(table)} AS l WHERE ${byPrimaryKey('l', 'input', 'processing')}
      ), woke AS (
        UPDATE ${s} AS p SET done = true, lease_version = input.version, done_at = now()
        FROM input JOIN f ON f.id = input.id AND f.lease_version = input.version
        WHERE p.task_id = input.id AND p.kind = 'sleep' AND NOT p.done AND p.wake_at <= now()
        RETURNING p.task_id, p.name
      )
      SELECT p.task_id, p.name, p.done OR w.name IS NOT NULL AS done, p.result, p.result IS NULL AS nothing, p.position, p.kind
      FROM ${s} AS p LEFT JOIN woke AS w ON w.task_id = p.task_id AND w.name = p.name
      WHERE p.task_id = ANY(${tokens.map((t) => t.id)}::bigint[])
    `,
  );
  const byTask = new Map<string, Map<string, RecordedStep>>(tokens.map((t) => [t.id, new Map()]));
  // pg reads SQL NULL ("returned nothing") and JSON null alike; `nothing` tells them apart
  for (const r of rows) {
    byTask.get(String(r.task_id))?.set(r.name, { done: r.done, result: r.nothing ? undefined : r.result, position: r.position, kind: r.kind });
  }
  return byTask;
}

/**
 * Locks the task's row at its fencing token until the transaction ends (`FOR NO KEY UPDATE`,
 * which a claim, heartbeat, finalize or cancel of the row waits for); false when the lease moved
 * on or the task left `processing` (cancelled). Taken last in a transaction that commits the
 * application's writes with a step, so the lock is held only for the commit: whatever changed
 * the token before, the fence sees.
 */
export async function taskFenceLock(executor: Executor, table: LeasedTable<unknown>, token: LeaseToken): Promise<boolean> {
  const rows = await execute<{ id: string }>(
    executor,
    sql`SELECT t.id FROM ${tableRef(table)} AS t WHERE ${fence('t', token.id, token.leaseVersion)} FOR NO KEY UPDATE`,
  );
  return rows.length === 1;
}

/**
 * Records a finished step with the fence, in one statement: the task's row is locked at its
 * token, and only then is the step written (or an open sleep or wait closed). False, writing
 * nothing, when the lease moved on. `resultJson` null stores "returned nothing".
 */
export async function taskStepRecord(
  executor: Executor,
  table: LeasedTable<unknown>,
  token: LeaseToken,
  name: string,
  resultJson: string | null,
  place: RecordPlace,
): Promise<boolean> {
  const values = { id: token.id, version: token.leaseVersion, name, resultJson, position: place.position, kind: place.kind };
  // compiled once per table (see taskStepRecordMany): every database step and spawn sends it
  const rows = await executeCached<{ ok: number }, typeof values>(executor, `taskStepRecord:${table.schema}.${table.table}`, (v) => sql<{ ok: number }>`
      WITH f AS (
        SELECT t.id FROM ${tableRef(table)} AS t WHERE ${fence('t', v.id, v.version)} FOR NO KEY UPDATE
      )
      INSERT INTO ${stepTableRef(table)} AS s (task_id, name, done, result, lease_version, done_at, position, kind)
      SELECT f.id, ${v.name}::text, true, ${v.resultJson}::jsonb, ${v.version}::bigint, now(), ${v.position}::int, ${v.kind}::text FROM f
      ON CONFLICT (task_id, name) DO UPDATE
        SET done = true, result = excluded.result, lease_version = excluded.lease_version, done_at = now(),
            position = coalesce(s.position, excluded.position), kind = coalesce(s.kind, excluded.kind)
        WHERE NOT s.done
      RETURNING 1 AS ok
    `, values);
  return rows.length === 1;
}

/** A task as a parent reads its children. */
export interface ChildRow {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly parentId: string | null;
  readonly result: unknown;
  readonly lastError: string | null;
  readonly resolution: string | null;
}

/** The given tasks' status and result. No locks. */
export async function taskChildrenRead(executor: Executor, table: LeasedTable<unknown>, ids: readonly string[]): Promise<Map<string, ChildRow>> {
  const rows = await execute<{ id: string; name: string; status: string; parent_id: string | null; result: unknown; nothing: boolean; last_error: string | null; resolution: string | null }>(
    executor,
    sql`SELECT id, name, status, parent_id, result, result IS NULL AS nothing, last_error, resolution FROM ${tableRef(table)} WHERE id = ANY(${[...ids]}::bigint[])`,
    { prepare: false },
  );
  return new Map(
    rows.map((r) => [
      String(r.id),
      { id: String(r.id), name: r.name, status: r.status, parentId: r.parent_id === null ? null : String(r.parent_id), result: r.nothing ? undefined : r.result, lastError: r.last_error, resolution: r.resolution },
    ]),
  );
}

/** One finished step for {@link taskStepRecordMany}. */
export interface StepRecord {
  readonly taskId: string;
  readonly leaseVersion: number;
  readonly name: string;
  /** JSON text; null for "returned nothing". */
  readonly resultJson: string | null;
  /** Its place in the run's calls (a plain step's kind is 'step'). */
  readonly position: number;
}

/**
 * {@link taskStepRecord} for many steps of different tasks in one statement: the tasks' rows are
 * locked in id order, and each step is written only if its task is still `processing` at its
 * token. Returns the steps written, as `task_id/name` keys.
 */
export async function taskStepRecordMany(executor: Executor, table: LeasedTable<unknown>, steps: readonly StepRecord[]): Promise<Set<string>> {
  const values = stepRecordValues(steps);
  // compiled once per table: a workflow's every step sends it (Kysely's compile and the text's
  // statement name cost some 10 % of a step's worker CPU when rebuilt per call)
  const rows = await executeCached<{ task_id: string; name: string }, StepRecordValues>(
    executor,
    `taskStepRecordMany:${table.schema}.${table.table}`,
    (v) => stepRecordStatement(table, v),
    values,
    // prepared: a batch holds at most one step per running handler, so a generic plan fits it
  );
  return new Set(rows.map((r) => `${r.task_id}/${r.name}`));
}

// Interpolates `v` only (see executeCached): the text depends on the table alone.
function stepRecordStatement(table: LeasedTable<unknown>, v: StepRecordValues): RawBuilder<{ task_id: string; name: string }> {
  return sql<{ task_id: string; name: string }>`
      WITH ${stepInputCte(v)}, f AS (
        -- the fence: each task's row locked while it is processing; its token is compared below,
        -- against the row as locked (the latest version). By primary key, as in the fenced
        -- writes (see byPrimaryKey): planned on the processing rows' index with statistics taken
        -- while they were pending, 16 steps among 51,000 tasks in flight took 355 ms
        SELECT l.id, l.lease_version FROM ${tableRef(table)} AS l
        WHERE ${byPrimaryKey('l', 'input', 'processing', 'task_id')}
        ORDER BY l.id FOR NO KEY UPDATE
      )
      ${stepInsert(table)}
    `;
}

/** The arrays a batch of step records is sent as (see {@link stepRecordValues}). @internal */
export interface StepRecordValues extends Record<string, unknown> {
  readonly ids: unknown;
  readonly versions: unknown;
  readonly names: unknown;
  readonly results: unknown;
  readonly positions: unknown;
}

/** `steps` as the arrays of {@link stepInputCte}. @internal */
export function stepRecordValues(steps: readonly StepRecord[]): StepRecordValues {
  return {
    ids: steps.map((s) => s.taskId),
    versions: steps.map((s) => s.leaseVersion),
    names: steps.map((s) => s.name),
    results: steps.map((s) => s.resultJson),
    positions: steps.map((s) => s.position),
  };
}

/** The CTE `input (task_id, version, name, result, position)`: one row per step record. @internal */
export function stepInputCte(v: StepRecordValues): RawBuilder<unknown> {
  return sql`input AS (
        SELECT * FROM unnest(${v.ids}::bigint[], ${v.versions}::bigint[], ${v.names}::text[], ${v.results}::jsonb[], ${v.positions}::int[])
                      AS u(task_id, version, name, result, position)
      )`;
}

/**
 * The INSERT of the step records in `input` whose tasks the CTE `f (id, lease_version)` locked at
 * their tokens; returns `(task_id, name)` of each written. A step recorded done before stays as it
 * was (a repeat is not written, and not returned). @internal
 */
export function stepInsert(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql`INSERT INTO ${stepTableRef(table)} AS s (task_id, name, done, result, lease_version, done_at, position, kind)
      SELECT i.task_id, i.name, true, i.result, i.version, now(), i.position, 'step'
      FROM input AS i JOIN f ON f.id = i.task_id AND f.lease_version = i.version
      ON CONFLICT (task_id, name) DO UPDATE
        SET done = true, result = excluded.result, lease_version = excluded.lease_version, done_at = now(),
            position = coalesce(s.position, excluded.position), kind = coalesce(s.kind, excluded.kind)
        WHERE NOT s.done
      RETURNING s.task_id, s.name`;
}

/**
 * Records a patch marker (`ctx.patched`): `patch:<id>` with its answer, no position. A true
 * answer raises the task's version to `raiseTo` (never lowers it): the run now takes code that
 * older versions do not have. The caller holds the task's fence lock.
 */
export async function taskPatchRecord(
  executor: Executor,
  table: LeasedTable<unknown>,
  token: LeaseToken,
  name: string,
  value: boolean,
  raiseTo: number,
): Promise<void> {
  await execute(
    executor,
    sql`
      INSERT INTO ${stepTableRef(table)} (task_id, name, done, result, lease_version, done_at, position, kind)
      VALUES (${token.id}::bigint, ${name}::text, true, to_jsonb(${value}::boolean), ${token.leaseVersion}::bigint, now(), NULL, 'patch')
      ON CONFLICT (task_id, name) DO NOTHING
    `,
  );
  if (value) {
    await execute(
      executor,
      sql`UPDATE ${tableRef(table)} AS t SET version = ${raiseTo}::int
          WHERE ${fence('t', token.id, token.leaseVersion)} AND t.version < ${raiseTo}::int`,
    );
  }
}
