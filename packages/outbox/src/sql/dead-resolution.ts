import type { TaskStatus } from '@leasehold/core';

/** What `retryDead` / `skipDead` did with each id it was given. */
export interface DeadResolution {
  /** Ids that were dead and were changed, ascending. */
  readonly changed: string[];
  /**
   * Ids that were left alone, ascending: `status` null means no such message; otherwise the
   * message was not dead (its status as read by the statement).
   */
  readonly rejected: ReadonlyArray<{ readonly id: string; readonly status: TaskStatus | null }>;
}

/** Splits the report rows of a resolve statement. @internal */
export function toDeadResolution(rows: ReadonlyArray<{ id: string; changed: boolean; status: TaskStatus | null }>): DeadResolution {
  const changed: string[] = [];
  const rejected: { id: string; status: TaskStatus | null }[] = [];
  for (const r of rows) {
    if (r.changed) changed.push(String(r.id));
    else rejected.push({ id: String(r.id), status: r.status ?? null });
  }
  return { changed, rejected };
}
