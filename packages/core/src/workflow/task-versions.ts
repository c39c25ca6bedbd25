import { parseDuration, type Duration } from '../duration.js';
import { taskTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { withoutJit } from '../sql/without-jit.js';
import { taskVersionCounts, type TaskVersionRow } from '../sql/task-version-counts.js';
import { taskWorkerList, type LiveWorker } from '../sql/task-worker-list.js';

/** Options of {@link taskVersions}. */
export interface TaskVersionsOptions {
  /** Schema of core's task table. @defaultValue 'leasehold' */
  schema?: string;
  /**
   * A worker counts as live when it reported within this long. Workers report every half
   * minute, so the default allows three missed reports before one is taken for dead.
   * @defaultValue '2m'
   */
  liveWithin?: Duration;
}

/** What {@link taskVersions} reads. */
export interface TaskVersions {
  /** Unfinished runs per task name and version, by name then version. */
  readonly versions: readonly TaskVersionRow[];
  /** The live workers, by owner. Empty when none reports (workers from before core migration 11 do not). */
  readonly workers: readonly LiveWorker[];
}

/**
 * The unfinished runs (pending, processing, waiting) per task name and version, and whether a
 * live worker accepts each — `acceptedBy: 0` marks runs no running worker can claim, which wait
 * until a worker whose definition accepts that version starts (`defineTask(name, { version,
 * accepts })`); it is null while no live worker reports what it accepts (workers from before core
 * migration 11 do not). Also the live workers and what they accept. Reads the unfinished rows from their
 * partial indexes and the worker list, never the finished rows. Takes no locks.
 *
 * @example
 * const { versions } = await taskVersions(pool);
 * for (const v of versions.filter((v) => v.acceptedBy === 0)) {
 *   console.warn(`${v.pending} runs of ${v.name} v${v.version} wait for a worker that accepts them`);
 * }
 */
export async function taskVersions(executor: Executor, options: TaskVersionsOptions = {}): Promise<TaskVersions> {
  const table = taskTable(options.schema);
  const liveWithinMs = parseDuration(options.liveWithin ?? '2m', 'liveWithin');
  const [versions, workers] = await Promise.all([
    // its estimate passes jit_above_cost at some 60,000 unfinished runs: compiling took longer than the read
    withoutJit(executor, (on) => taskVersionCounts(on, table, liveWithinMs)),
    taskWorkerList(executor, table, liveWithinMs),
  ]);
  return { versions, workers };
}
