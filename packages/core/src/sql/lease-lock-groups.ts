import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';

/**
 * Serialises producers of the same ordering groups until the caller's transaction ends: a
 * transaction-scoped advisory lock per `(table, group)`, taken in sorted order so two producers
 * of overlapping groups cannot deadlock. Call it inside the transaction that inserts the rows,
 * before the insert, so that id order equals commit order inside a group.
 */
export async function leaseLockGroups(
  executor: Executor,
  table: LeasedTable<unknown>,
  groups: readonly string[],
): Promise<void> {
  const unique = [...new Set(groups)].sort();
  if (unique.length === 0) return;
  const prefix = `leasehold:${table.schema}.${table.table}:`;
  await execute(
    executor,
    sql`SELECT pg_advisory_xact_lock(hashtextextended(${prefix} || g, 0))
        FROM unnest(${unique}::text[]) WITH ORDINALITY AS u(g, n) ORDER BY n`,
  );
}
