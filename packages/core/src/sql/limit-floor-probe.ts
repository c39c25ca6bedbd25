import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { executeCached, type Executor } from './execute.js';
import { servedFilter, servedFilterValues, servedKey, servedShape, type ServedRows } from './served-rows.js';
import { LIMITED_READY } from './limit-stripes.js';
import { tableRef } from './table-ref.js';

/** Which rows a worker claims under which limits (see `LeaseClaimInput`). */
export interface LimitFloorProbeInput extends ServedRows {
  readonly flows: readonly string[];
}

/**
 * Per limit, the lowest id of a ready row of key '' and priority 0 that the worker's claims could
 * take, locked or not: what `LimitFloors` checks each floor against. Limits with none are left
 * out. Read-only and without locks; it walks each limit's index from its start, the cost a claim
 * saves by starting at the floor, but only once per probe interval and beside the claims.
 */
export async function limitFloorProbe(executor: Executor, table: LeasedTable<unknown>, input: LimitFloorProbeInput): Promise<Map<string, string>> {
  const served = servedShape(input);
  const key = `limitFloorProbe:${table.schema}.${table.table}:${servedKey(served)}`;
  const values = {
    flows: [...input.flows],
    ...servedFilterValues(input),
  };
  const build = (v: typeof values) => {
    // the ranges as the claims' floor branch writes them (see limitedReadyRanges)
    return sql<{ flow: string; id: string | null }>`
      SELECT f.flow, (SELECT c.id FROM ${tableRef(table)} AS c
                      WHERE c.flow = f.flow AND c.flow_key >= '' AND c.flow_key <= '' AND c.priority >= 0 AND c.priority <= 0
                        AND ${LIMITED_READY} ${servedFilter(served, v, table.nameColumn)}
                      ORDER BY c.flow_key, c.priority DESC, c.id
                      LIMIT 1) AS id
      FROM unnest(${v.flows}::text[]) AS f(flow)`;
  };
  const rows = await executeCached(executor, key, build, values);
  return new Map(rows.flatMap((r) => (r.id === null ? [] : [[r.flow, String(r.id)] as const])));
}
