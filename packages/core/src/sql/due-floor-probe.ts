import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { executeCached, type Executor } from './execute.js';
import { servedFilter, servedFilterValues, servedKey, servedShape, type ServedRows } from './served-rows.js';
import { duePosition, type DueSource } from './lease-claim.js';
import { tableRef } from './table-ref.js';

/** Which rows a worker claims: the filters of its claims (see `LeaseClaimInput`). */
export type DueFloorProbeInput = ServedRows;

/**
 * The position (`'<µs since the epoch>:<id>'`, as the claim's `dueFloors` take it) of the earliest
 * scheduled row due now that the worker's claims could take (`'due'`), and of the earliest parked
 * run due now, whoever serves it (`'parked'`: any claim wakes any parked run), locked or not; a
 * source with none is left out. What the worker's `DueFloors` check their floors against.
 * Read-only and without locks; it reads each index from its start, the cost a claim saves by
 * starting at the floor, but only once per probe interval and beside the claims.
 */
export async function dueFloorProbe(executor: Executor, table: LeasedTable<unknown>, input: DueFloorProbeInput): Promise<Map<DueSource, string>> {
  const served = servedShape(input);
  const key = `dueFloorProbe:${table.schema}.${table.table}:${servedKey(served)}`;
  const values = {
    ...servedFilterValues(input),
  };
  const t = tableRef(table);
  const limited = table.limitTable === undefined ? sql`` : sql`AND c.flow IS NULL`;
  const build = (v: typeof values) => {
    const parked = table.waits
      ? sql`(SELECT ${duePosition('c')} FROM ${t} AS c WHERE c.status = 'waiting' AND c.scheduled AND c.available_at <= now()
             ORDER BY c.available_at, c.id LIMIT 1)`
      : sql`NULL::text`;
    return sql<{ due: string | null; parked: string | null }>`
      SELECT (SELECT ${duePosition('c')} FROM ${t} AS c
              WHERE c.status = 'pending' AND c.scheduled AND NOT c.blocked ${limited} AND c.available_at <= now()
                ${servedFilter(served, v, table.nameColumn)}
              ORDER BY c.available_at, c.id LIMIT 1) AS due,
             ${parked} AS parked`;
  };
  const [row] = await executeCached(executor, key, build, values);
  const first = new Map<DueSource, string>();
  if (row?.due != null) first.set('due', String(row.due));
  if (row?.parked != null) first.set('parked', String(row.parked));
  return first;
}
