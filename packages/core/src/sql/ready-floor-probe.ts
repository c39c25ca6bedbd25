import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { executeCached, type Executor } from './execute.js';
import { servedFilter, servedFilterValues, servedKey, servedShape, type ServedRows } from './served-rows.js';
import { tableRef } from './table-ref.js';

/** Which rows a worker claims: the filters of its claims (see `LeaseClaimInput`), and the priorities with a floor. */
export interface ReadyFloorProbeInput extends ServedRows {
  readonly priorities: readonly number[];
}

/**
 * Per priority of `priorities`, the lowest id of a pending row of that priority in the claim
 * index that the worker's claims could take, locked or not (a priority with none is left out):
 * what each of the worker's `PriorityFloors` checks its floor against. Read-only and without
 * locks; it walks each priority's range from its start, the cost a claim saves by starting at
 * the floor, but only once per probe interval and beside the claims.
 */
export async function readyFloorProbe(executor: Executor, table: LeasedTable<unknown>, input: ReadyFloorProbeInput): Promise<Map<number, string>> {
  const served = servedShape(input);
  const key = `readyFloorProbe:${table.schema}.${table.table}:${servedKey(served)}`;
  const values = {
    ...servedFilterValues(input),
    priorities: [...input.priorities],
  };
  const limited = table.limitTable === undefined ? sql`` : sql`AND c.flow IS NULL`;
  const build = (v: typeof values) => {
    return sql<{ priority: number; id: string | null }>`
      SELECT p.priority, (
        SELECT c.id FROM ${tableRef(table)} AS c
        WHERE c.status = 'pending' AND NOT c.blocked AND NOT c.scheduled ${limited}
          AND c.priority = p.priority ${servedFilter(served, v, table.nameColumn)}
        ORDER BY c.priority DESC, c.id
        LIMIT 1) AS id
      FROM unnest(${v.priorities}::int[]) AS p(priority)`;
  };
  const rows = await executeCached(executor, key, build, values);
  const first = new Map<number, string>();
  for (const row of rows) if (row.id !== null) first.set(Number(row.priority), String(row.id));
  return first;
}
