import { taskTable } from '../leased-table.js';
import type { RecordKind } from '../errors.js';
import type { Executor } from '../sql/execute.js';
import {
  taskChildrenList,
  taskRead,
  taskSignalsList,
  taskStepsList,
  type ChildReadRow,
  type SignalReadRow,
  type StepReadRow,
  type TaskReadRow,
} from '../sql/task-read.js';
import type { TaskStatus } from '../task-status.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';

/** A task as {@link getTask} reads it. */
export interface TaskInfo<R = unknown> extends Omit<TaskReadRow, 'result'> {
  /** What its handler returned, once `done`; undefined before, or when it returned nothing. */
  readonly result: R | undefined;
  /** Its recorded workflow steps, in the order first recorded. */
  readonly steps: readonly StepReadRow[];
  /** The tasks it spawned (`ctx.spawn`), by id. */
  readonly children: readonly ChildReadRow[];
  /** The signals sent to it, taken by a wait or still pending, in the order sent. */
  readonly signals: readonly SignalReadRow[];
  /** Its steps, signals and children as one history, oldest first: see {@link TimelineEntry}. */
  readonly timeline: readonly TimelineEntry[];
}

/**
 * One event of a run's history, as {@link getTask} reads it, at `at`:
 * - `step`: a recorded call (`ctx.step`, `ctx.db`, `ctx.sleep`, `ctx.spawn`, `ctx.waitForSignal`,
 *   a patch marker), at the time it was recorded. A step, a database step, a spawn and a patch are
 *   recorded once, when they end (`at` = `doneAt`): their start is not recorded, so `durationMs`
 *   is null. A sleep and a signal wait are recorded when they start and closed when they end:
 *   `wakeAt` is the sleep's wake time or the wait's deadline, and `durationMs` how long it lasted,
 *   once done. `leaseVersion` is the claim of the run that recorded it (or closed it), so steps of
 *   one claim share it; `position` is its place in the run's calls (null for a patch marker).
 * - `signal`: a signal sent to the task (`at` = its sending); `consumedAt` is when a wait took
 *   it, null while it is pending.
 * - `child`: a task it spawned (`at` = its creation), with its status now and when it ended.
 */
export type TimelineEntry =
  | {
      readonly type: 'step';
      readonly at: Date;
      readonly name: string;
      /** Null for a step recorded before core migration 11. */
      readonly kind: RecordKind | null;
      readonly position: number | null;
      readonly done: boolean;
      readonly doneAt: Date | null;
      readonly wakeAt: Date | null;
      readonly durationMs: number | null;
      readonly leaseVersion: number;
    }
  | { readonly type: 'signal'; readonly at: Date; readonly id: string; readonly name: string; readonly consumedAt: Date | null }
  | { readonly type: 'child'; readonly at: Date; readonly id: string; readonly name: string; readonly status: TaskStatus; readonly doneAt: Date | null };

const GET_OPTIONS = optionKeys<{ schema?: string }>()('getTask', ['schema']);

/**
 * Reads a task: status, result or last error, its recorded steps, the signals sent to it, its
 * children, and all of them as one `timeline`; null when there is no such task. Takes no locks.
 *
 * @example
 * const task = await getTask(pool, handle); // handle from enqueue: result typed
 * if (task?.status === 'done') console.log(task.result);
 * for (const entry of task?.timeline ?? []) console.log(entry.at, entry.type, entry.name);
 */
export async function getTask<R = unknown>(executor: Executor, task: string | TaskRef<R>, options: { schema?: string } = {}): Promise<TaskInfo<R> | null> {
  checkOptionKeys(options, GET_OPTIONS);
  const id = taskId(task);
  const table = taskTable(options.schema);
  const row = await taskRead(executor, table, id);
  if (row === undefined) return null;
  const [steps, children, signals] = await Promise.all([
    taskStepsList(executor, table, id),
    taskChildrenList(executor, table, id),
    taskSignalsList(executor, table, id),
  ]);
  return { ...row, result: row.result as R | undefined, steps, children, signals, timeline: timelineOf(steps, signals, children) };
}

const OPENED: ReadonlySet<RecordKind> = new Set(['sleep', 'signal']);
const ORDER = { step: 0, signal: 1, child: 2 } as const;

function timelineOf(steps: readonly StepReadRow[], signals: readonly SignalReadRow[], children: readonly ChildReadRow[]): TimelineEntry[] {
  const entries: TimelineEntry[] = [
    ...steps.map((s): TimelineEntry => ({
      type: 'step',
      at: s.createdAt,
      name: s.name,
      kind: s.kind,
      position: s.position,
      done: s.done,
      doneAt: s.doneAt,
      wakeAt: s.wakeAt,
      durationMs: s.kind !== null && OPENED.has(s.kind) && s.doneAt !== null ? s.doneAt.getTime() - s.createdAt.getTime() : null,
      leaseVersion: s.leaseVersion,
    })),
    ...signals.map((s): TimelineEntry => ({ type: 'signal', at: s.sentAt, id: s.id, name: s.name, consumedAt: s.consumedAt })),
    ...children.map((c): TimelineEntry => ({ type: 'child', at: c.createdAt, id: c.id, name: c.name, status: c.status, doneAt: c.doneAt })),
  ];
  // stable: within a type, the order each list was read in
  return entries.sort((a, b) => a.at.getTime() - b.at.getTime() || ORDER[a.type] - ORDER[b.type]);
}
