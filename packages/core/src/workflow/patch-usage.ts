import { taskTable } from '../leased-table.js';
import { checkName } from '../input/text.js';
import type { Executor } from '../sql/execute.js';
import { patchUsageCounts, type PatchUsageRow } from '../sql/patch-usage-counts.js';

/** Options of {@link patchUsage}. */
export interface PatchUsageOptions {
  /** Schema of core's task table. @defaultValue 'leasehold' */
  schema?: string;
  /** Only this task name. */
  task?: string;
  /** Only this patch id. With `task` too, the pair is reported even when no unfinished run recorded it. */
  patch?: string;
}

/**
 * How many unfinished runs still need the old branch of each patch (`ctx.patched(id)`), per task
 * name and patch id, so you know when the old branch and the `patched` call can go.
 *
 * The rule, over the task's unfinished runs (pending, processing, waiting):
 * - `newPath`: runs that recorded the patch `true` (they reached it fresh and took the new path);
 * - `oldPath`: runs that recorded it `false` (they had gone past it on old code): they replay the
 *   old branch and fail with a `NonDeterminismError` if it is gone;
 * - `undecided`: runs with no marker yet, created before `firstNewAt` — the earliest time an
 *   unfinished run recorded the patch `true` — or every unmarked run when none did. Such a run may
 *   have gone past that point on old code, so it counts as needing the old branch.
 *
 * The old branch can go when `oldPath` and `undecided` are both 0 and no worker running code
 * without the patch is left (an old worker can still take a run past the point after
 * `firstNewAt`; see {@link taskVersions} for the live workers). A patch is listed once an
 * unfinished run recorded it; ask for it by `task` and `patch` to get its row even when none
 * did. Reads the unfinished rows from their partial indexes and their markers by run, so the
 * cost follows the unfinished runs, not the history. Takes no locks; one snapshot.
 *
 * @example
 * const [usage] = await patchUsage(pool, { task: 'place-order', patch: 'charge-before-reserve' });
 * if (usage && usage.oldPath + usage.undecided === 0) console.log('the old branch can go');
 */
export async function patchUsage(executor: Executor, options: PatchUsageOptions = {}): Promise<PatchUsageRow[]> {
  const table = taskTable(options.schema);
  const task = options.task === undefined ? undefined : checkName(options.task, 'task');
  const patch = options.patch === undefined ? undefined : checkName(options.patch, 'patch');
  return patchUsageCounts(executor, table, { task, patch });
}
