import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { executeCached, type Executor } from './execute.js';
import { versionFilter, type ClaimVersions } from './claim-versions.js';
import { tableRef } from './table-ref.js';

/** Which rows a worker claims: the filters of its claims (see `LeaseClaimInput`). */
export interface ReadyFloorProbeInput {
  readonly names?: readonly string[] | undefined;
  readonly versions?: ClaimVersions | undefined;
}

/**
 * The lowest id of a pending row of priority 0 in the claim index that the worker's claims could
 * take, locked or not, or null when there is none: what `ReadyFloor` checks its floor against.
 * Read-only and without locks; it walks the index from its start, the cost a claim saves by
 * starting at the floor, but only once per probe interval and beside the claims.
 */
export async function readyFloorProbe(executor: Executor, table: LeasedTable<unknown>, input: ReadyFloorProbeInput): Promise<string | null> {
  const versions = input.versions;
  const key = `readyFloorProbe:${table.schema}.${table.table}:${input.names === undefined ? '' : 'names'}:${versions === undefined ? '' : versions.firstOnly ? 'v1' : 'vkeys'}`;
  const values = {
    names: input.names === undefined ? [] : [...input.names],
    versionKeys: versions === undefined || versions.firstOnly ? [] : versions.keys,
  };
  const limited = table.limitTable === undefined ? sql`` : sql`AND c.flow IS NULL`;
  const build = (v: typeof values) => {
    const names = input.names === undefined ? sql`` : sql`AND ${sql.ref(`c.${table.nameColumn}`)} = ANY(${v.names}::text[])`;
    return sql<{ id: string }>`
      SELECT c.id FROM ${tableRef(table)} AS c
      WHERE c.status = 'pending' AND NOT c.blocked AND NOT c.scheduled ${limited}
        AND c.priority = 0 ${names} ${versionFilter(versions, v.versionKeys, table.nameColumn)}
      ORDER BY c.priority DESC, c.id
      LIMIT 1`;
  };
  const rows = await executeCached(executor, key, build, values);
  return rows.length === 0 ? null : String(rows[0]!.id);
}
