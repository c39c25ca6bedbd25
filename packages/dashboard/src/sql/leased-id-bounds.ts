import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { tableRef } from './table-ref.js';

/** The lowest and highest id of a leased table, or null when it is empty. */
export interface IdBounds {
  readonly min: string;
  readonly max: string;
}

/**
 * The table's id range: where a list's first page starts. Two probes of the primary key (one at
 * each end), whatever the table's size. Takes no locks.
 */
export async function leasedIdBounds(executor: Executor, table: LeasedTable<unknown>): Promise<IdBounds | null> {
  const [row] = await execute<{ min: string | null; max: string | null }>(
    executor,
    sql`SELECT min(id)::text AS min, max(id)::text AS max FROM ${tableRef(table)}`,
  );
  return row?.min == null || row.max == null ? null : { min: row.min, max: row.max };
}
