import type { LimitRow } from '@leasehold/core';

/** A task name of a limit that a later worker start declared under another limit. */
export interface MovedTask {
  readonly taskName: string;
  /** The limit it was declared under last, and when. */
  readonly limit: string;
  readonly seenAt: Date;
}

/**
 * For each limit, its task names that a limit declared later lists too: the code moved them.
 * Such a limit is stale for those tasks, and stale outright when all of them moved. (A limit
 * removed with no successor is not detectable from the rows: only its date grows old.)
 */
export function movedTasks(limits: readonly LimitRow[]): Map<string, MovedTask[]> {
  const moved = new Map<string, MovedTask[]>();
  for (const l of limits) {
    const list: MovedTask[] = [];
    for (const taskName of l.taskNames) {
      let latest: LimitRow | undefined;
      for (const other of limits) {
        if (other.name === l.name || other.seenAt <= l.seenAt || !other.taskNames.includes(taskName)) continue;
        if (latest === undefined || other.seenAt > latest.seenAt) latest = other;
      }
      if (latest !== undefined) list.push({ taskName, limit: latest.name, seenAt: latest.seenAt });
    }
    moved.set(l.name, list);
  }
  return moved;
}
