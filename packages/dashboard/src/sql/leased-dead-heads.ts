import type { Executor, LeasedTable } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';
import { WAITING_CAP } from './leased-group-state.js';
import { tableRef } from './table-ref.js';

/** A dead row that heads an ordering group: the group waits for a person. */
export interface DeadHead {
  readonly id: string;
  readonly groupKey: string;
  readonly name: string;
  readonly lastError: string | null;
  readonly attempts: number;
  readonly createdAt: Date;
  /** Rows blocked behind it, up to {@link WAITING_CAP} + 1. */
  readonly waiting: number;
}

/**
 * Ordering groups (outbox aggregates) blocked by a dead head, by the head's id after `afterId`.
 * A dead row of a group is always its head (only heads run), so these are the dead rows with a
 * group key: read from `<table>_dead` (id), each with a capped count over `<table>_blocked`.
 * Takes no locks.
 */
export async function leasedDeadHeads(executor: Executor, table: LeasedTable<unknown>, afterId: string, limit: number): Promise<DeadHead[]> {
  const t = tableRef(table);
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      SELECT d.id, d.group_key, ${sql.ref(`d.${table.nameColumn}`)} AS name, left(d.last_error, 300) AS last_error,
             d.attempts, d.created_at,
             (SELECT count(*) FROM (
                SELECT 1 FROM ${t} AS b WHERE b.blocked AND b.group_key = d.group_key LIMIT ${WAITING_CAP + 1}
              ) AS w) AS waiting
      FROM ${t} AS d
      WHERE d.status = 'dead' AND d.group_key IS NOT NULL AND d.id > ${afterId}::bigint
      ORDER BY d.id
      LIMIT ${limit}
    `,
  );
  return rows.map((r) => ({
    id: String(r.id),
    groupKey: r.group_key as string,
    name: r.name as string,
    lastError: (r.last_error as string | null) ?? null,
    attempts: Number(r.attempts),
    createdAt: r.created_at as Date,
    waiting: Number(r.waiting),
  }));
}
