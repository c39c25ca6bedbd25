import type { Executor, LeasedTable } from '@leasehold/core';
import { taskIdAt } from '@leasehold/core/internal';

/**
 * The first id whose row was created at or after `at`, or the highest id + 1 when none was: where
 * a time bound of the list falls. Ids grow with `created_at` (both are drawn as a row is
 * inserted), so this is a binary search over the primary key, about 20 index probes for a million
 * rows, instead of a scan of every newer row; core's `listTasks` bounds its pages the same way. A
 * row whose inserting transaction ran across `at` can land on the other side of it (its
 * `created_at` is its transaction's start). Takes no locks.
 *
 * @example
 * const fromId = await leasedIdAt(pool, taskTable(), new Date(Date.now() - 3_600_000));
 */
export async function leasedIdAt(executor: Executor, table: LeasedTable<unknown>, at: Date): Promise<string> {
  // an empty table: 1, the id its first row will have at the least
  return (await taskIdAt(executor, table, at)) ?? '1';
}
