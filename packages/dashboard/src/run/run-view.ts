import type { TaskInfo } from '@leasehold/core';
import type { Grandchildren } from '../sql/task-grandchildren.js';
import type { TaskEventRow } from '../sql/task-events-list.js';

/** What the run sections of a task's page show, read once per page. */
export interface RunView {
  /** `getTask`'s answer: steps, signals, children, the timeline, `forkedFrom`. */
  readonly info: TaskInfo;
  /** Progress events with their values through `redact`; null on a schema without them. */
  readonly events: readonly TaskEventRow[] | null;
  /** The second level of the children tree. */
  readonly grandchildren: Grandchildren;
  /** The database's clock when the page was read: open bars end here. */
  readonly now: Date;
  /** Links to tasks: `/base/tasks`. */
  readonly path: string;
}

/** Children the tree shows per level before "and N more" (the rest are a list filter away). */
export const CHILDREN_SHOWN = 100;
export const GRANDCHILDREN_SHOWN = 10;

/** Whether the task has anything of a workflow run to show. */
export function isRun(v: RunView): boolean {
  const i = v.info;
  return i.steps.length > 0 || i.children.length > 0 || i.signals.length > 0 || (v.events?.length ?? 0) > 0 || i.forkedFrom !== null || i.parentId !== null;
}
