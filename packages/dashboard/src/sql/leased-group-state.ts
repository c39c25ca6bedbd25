import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { groupTableRef, tableRef } from './table-ref.js';

/** Counts of waiting rows stop here: the number is shown as "10,000+". */
export const WAITING_CAP = 10_000;

/** An ordering group as its `<table>_group` row and the blocked rows behind its head tell it. */
export interface GroupState {
  /** The group's head: its one unfinished row that may run (or is dead, and blocks the rest). */
  readonly headId: string | null;
  /** Rows waiting behind the head, up to {@link WAITING_CAP} + 1. */
  readonly waiting: number;
}

/**
 * The head and the number of waiting rows of one ordering group, or null when the group has no
 * unfinished row. A primary-key probe of `<table>_group` and a count over `<table>_blocked`
 * (group_key, id), stopped after {@link WAITING_CAP} + 1 rows. Takes no locks.
 */
export async function leasedGroupState(executor: Executor, table: LeasedTable<unknown>, groupKey: string): Promise<GroupState | null> {
  const [row] = await execute<{ head_id: string | null; waiting: string }>(
    executor,
    sql`
      SELECT g.head_id::text AS head_id,
             (SELECT count(*) FROM (
                SELECT 1 FROM ${tableRef(table)} AS b WHERE b.blocked AND b.group_key = g.group_key LIMIT ${WAITING_CAP + 1}
              ) AS w) AS waiting
      FROM ${groupTableRef(table)} AS g
      WHERE g.group_key = ${groupKey}
    `,
  );
  return row === undefined ? null : { headId: row.head_id, waiting: Number(row.waiting) };
}
