import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** Which page of dead ids {@link deadIds} returns. */
export interface DeadIdsPage {
  /** Only ids above this one; null starts at the first. */
  readonly afterId: string | null;
  /** Most ids to return. */
  readonly limit: number;
}

/**
 * One page of the ids of a leased table's dead rows, ascending, for `dead retry --all`. A page,
 * not every id: a table can keep hundreds of thousands of dead rows (a broker outage kills every
 * message it held), and the command must not hold them all at once. Uses the `*_dead` index
 * (its range from `afterId` on), so a page reads what it returns; no locks.
 */
export async function deadIds(executor: Executor, table: LeasedTable<unknown>, page: DeadIdsPage): Promise<string[]> {
  const rows = await execute<{ id: string }>(
    executor,
    sql`
      SELECT id FROM ${sql.id(table.schema, table.table)}
      WHERE status = 'dead' AND id > ${page.afterId ?? '0'}::bigint
      ORDER BY id
      LIMIT ${page.limit}
    `,
  );
  return rows.map((r) => String(r.id));
}
