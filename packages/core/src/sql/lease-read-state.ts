import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { TaskStatus } from '../task-status.js';
import { execute, type Executor } from './execute.js';
import { tableRef } from './table-ref.js';

/** The fencing state of one row now. */
export interface LeaseState {
  readonly id: string;
  readonly leaseVersion: number;
  readonly status: TaskStatus;
  /** Ordering group, or null. */
  readonly groupKey: string | null;
}

/** Reads the fencing state of rows (no locks), e.g. to learn whether a write whose reply was lost landed. */
export async function leaseReadState(executor: Executor, table: LeasedTable<unknown>, ids: readonly string[]): Promise<Map<string, LeaseState>> {
  if (ids.length === 0) return new Map();
  const rows = await execute<{ id: string; lease_version: string; status: TaskStatus; group_key: string | null }>(
    executor,
    sql`SELECT id, lease_version, status, group_key FROM ${tableRef(table)} WHERE id = ANY(${[...ids]}::bigint[])`,
  );
  return new Map(
    rows.map((r) => [String(r.id), { id: String(r.id), leaseVersion: Number(r.lease_version), status: r.status, groupKey: r.group_key }]),
  );
}
