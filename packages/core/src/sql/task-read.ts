import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { RecordKind } from '../errors.js';
import type { TaskStatus } from '../task-status.js';
import { execute, type Executor } from './execute.js';
import { signalTableRef, stepTableRef } from './task-steps.js';
import { tableRef } from './table-ref.js';
import { notifySleepers, wakeLockCte } from './wake-sleepers.js';

/** A task row as `getTask` reads it. */
export interface TaskReadRow {
  readonly id: string;
  readonly name: string;
  readonly status: TaskStatus;
  readonly payload: unknown;
  /** Undefined when the handler returned nothing (or has not returned). */
  readonly result: unknown;
  readonly lastError: string | null;
  readonly resolution: string | null;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly parentId: string | null;
  /** The task this one was forked from (`forkTask`, core migration 17); null when not a fork. */
  readonly forkedFrom: string | null;
  readonly waitFor: string | null;
  /** When a waiting task wakes by itself (a sleep, a wait's timeout); null when only an event wakes it, or not waiting. */
  readonly wakeAt: Date | null;
  readonly availableAt: Date;
  readonly createdAt: Date;
  readonly doneAt: Date | null;
  /** The version of the code that can run it (`defineTask`'s `version`; raised by a patch taken fresh). */
  readonly version: number;
}

/** One task by id, or undefined. No locks. */
export async function taskRead(executor: Executor, table: LeasedTable<unknown>, id: string): Promise<TaskReadRow | undefined> {
  const [r] = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT id, name, status, payload, result, result IS NULL AS nothing, last_error, resolution, attempts, max_attempts,
             parent_id, forked_from, wait_for, CASE WHEN status = 'waiting' AND scheduled THEN available_at END AS wake_at,
             available_at, created_at, done_at, version
      FROM ${tableRef(table)} WHERE id = ${id}::bigint
    `,
  );
  if (r === undefined) return undefined;
  return {
    id: String(r.id),
    name: r.name as string,
    status: r.status as TaskStatus,
    payload: r.payload,
    result: r.nothing === true ? undefined : r.result,
    lastError: (r.last_error as string | null) ?? null,
    resolution: (r.resolution as string | null) ?? null,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    parentId: r.parent_id === null ? null : String(r.parent_id),
    forkedFrom: r.forked_from === null || r.forked_from === undefined ? null : String(r.forked_from),
    waitFor: (r.wait_for as string | null) ?? null,
    wakeAt: (r.wake_at as Date | null) ?? null,
    availableAt: r.available_at as Date,
    createdAt: r.created_at as Date,
    doneAt: (r.done_at as Date | null) ?? null,
    version: Number(r.version),
  };
}

/** A recorded step, as people read it. */
export interface StepReadRow {
  readonly name: string;
  /** False: a sleep or wait under way. */
  readonly done: boolean;
  readonly result: unknown;
  readonly wakeAt: Date | null;
  readonly leaseVersion: number;
  readonly createdAt: Date;
  readonly doneAt: Date | null;
  /** Its place in the run's calls, as replay checks it; null for a patch marker or a step recorded before core migration 11. */
  readonly position: number | null;
  /** What recorded it (`step`, `db`, `sleep`, `spawn`, `signal`, `patch`); null before core migration 11. */
  readonly kind: RecordKind | null;
}

/** A task's recorded steps, in the order they were first recorded. No locks. */
export async function taskStepsList(executor: Executor, table: LeasedTable<unknown>, id: string): Promise<StepReadRow[]> {
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT name, done, result, result IS NULL AS nothing, wake_at, lease_version, created_at, done_at, position, kind
      FROM ${stepTableRef(table)} WHERE task_id = ${id}::bigint ORDER BY created_at, position, name
    `,
  );
  return rows.map((r) => ({
    name: r.name as string,
    done: r.done as boolean,
    result: r.nothing === true ? undefined : r.result,
    wakeAt: (r.wake_at as Date | null) ?? null,
    leaseVersion: Number(r.lease_version),
    createdAt: r.created_at as Date,
    doneAt: (r.done_at as Date | null) ?? null,
    position: r.position === null || r.position === undefined ? null : Number(r.position),
    kind: (r.kind as RecordKind | null) ?? null,
  }));
}

/** A child of a task, as `getTask` reads it. */
export interface ChildReadRow {
  readonly id: string;
  readonly name: string;
  readonly status: TaskStatus;
  readonly createdAt: Date;
  /** When it ended (done or cancelled); null before. */
  readonly doneAt: Date | null;
}

/** The ids, statuses and times of a task's children, by id. No locks. */
export async function taskChildrenList(executor: Executor, table: LeasedTable<unknown>, id: string): Promise<ChildReadRow[]> {
  const rows = await execute<{ id: string; name: string; status: TaskStatus; created_at: Date; done_at: Date | null }>(
    executor,
    sql`SELECT id, name, status, created_at, done_at FROM ${tableRef(table)} WHERE parent_id = ${id}::bigint ORDER BY id`,
  );
  return rows.map((r) => ({ id: String(r.id), name: r.name, status: r.status, createdAt: r.created_at, doneAt: r.done_at ?? null }));
}

/** A signal sent to a task, as `getTask` reads it. */
export interface SignalReadRow {
  /** The signal's own id (signals of a name are taken oldest first). */
  readonly id: string;
  readonly name: string;
  readonly sentAt: Date;
  /** When a wait took it; null while it is pending. */
  readonly consumedAt: Date | null;
}

/** The signals sent to a task, taken or not, in the order sent. No locks. */
export async function taskSignalsList(executor: Executor, table: LeasedTable<unknown>, id: string): Promise<SignalReadRow[]> {
  const rows = await execute<{ id: string; name: string; sent_at: Date; consumed_at: Date | null }>(
    executor,
    sql`SELECT id, name, sent_at, consumed_at FROM ${signalTableRef(table)} WHERE task_id = ${id}::bigint ORDER BY id`,
  );
  return rows.map((r) => ({ id: String(r.id), name: r.name, sentAt: r.sent_at, consumedAt: r.consumed_at ?? null }));
}

/**
 * Marks the task as awaited (its end then notifies `<channel>:ended`, core migration 8) and
 * reads its end: status, result and error. Undefined when there is no such task.
 */
export async function taskAwaitEnd(
  executor: Executor,
  table: LeasedTable<unknown>,
  id: string,
): Promise<{ status: TaskStatus; result: unknown; lastError: string | null; resolution: string | null } | undefined> {
  const t = tableRef(table);
  // the mark locks the row for a moment: a claim meeting it passes over a pending row
  await execute(
    executor,
    sql`
      WITH ${wakeLockCte(table)}, marked AS (
        UPDATE ${t} AS m SET result_wanted = true FROM wake
        WHERE m.id = ${id}::bigint AND NOT m.result_wanted AND m.status IN ('pending', 'processing', 'waiting', 'dead')
        RETURNING m.status
      )
      SELECT ${notifySleepers(table, sql`marked.status IN ('pending', 'waiting')`)} FROM marked
    `,
  );
  return taskEnd(executor, table, id);
}

/** The task's status, result and error now, or undefined. No locks. */
export async function taskEnd(
  executor: Executor,
  table: LeasedTable<unknown>,
  id: string,
): Promise<{ status: TaskStatus; result: unknown; lastError: string | null; resolution: string | null } | undefined> {
  const [r] = await execute<{ status: TaskStatus; result: unknown; nothing: boolean; last_error: string | null; resolution: string | null }>(
    executor,
    sql`SELECT status, result, result IS NULL AS nothing, last_error, resolution FROM ${tableRef(table)} WHERE id = ${id}::bigint`,
  );
  return r === undefined ? undefined : { status: r.status, result: r.nothing ? undefined : r.result, lastError: r.last_error, resolution: r.resolution };
}
