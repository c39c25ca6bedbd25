import type { Executor, LeasedTable } from '@leasehold/core';
import { compareIds, execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** One checked outbox row for {@link outboxInsertMany}. */
export interface OutboxInsert {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  /** Already JSON text. */
  readonly payloadJson: string;
  readonly headersJson: string;
  readonly groupKey: string | null;
  readonly maxAttempts: number;
}

/**
 * Inserts many outbox rows in one statement, in input order; returns their ids in input order.
 * Takes no locks beyond the new rows. An ordered row goes in behind its aggregate's head
 * (`blocked`): in the same transaction, `leaseLockGroups` must come before (so that id order
 * equals commit order in a group) and `leaseSettleGroups` after (to choose the heads). The
 * statement-level trigger sends one NOTIFY, delivered at commit.
 */
export async function outboxInsertMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  rows: readonly OutboxInsert[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const result = await execute<{ id: string }>(
    executor,
    sql`
      INSERT INTO ${sql.id(table.schema, table.table)}
        (aggregate_type, aggregate_id, event_type, payload, headers, group_key, max_attempts, blocked)
      SELECT u.aggregate_type, u.aggregate_id, u.event_type, u.payload, u.headers, u.group_key, u.max_attempts,
             u.group_key IS NOT NULL
      FROM unnest(${rows.map((r) => r.aggregateType)}::text[], ${rows.map((r) => r.aggregateId)}::text[],
                  ${rows.map((r) => r.eventType)}::text[], ${rows.map((r) => r.payloadJson)}::jsonb[],
                  ${rows.map((r) => r.headersJson)}::jsonb[], ${rows.map((r) => r.groupKey)}::text[],
                  ${rows.map((r) => r.maxAttempts)}::int[])
           WITH ORDINALITY AS u(aggregate_type, aggregate_id, event_type, payload, headers, group_key, max_attempts, n)
      -- ids are drawn in this order, so input order is id order
      ORDER BY u.n
      RETURNING id
    `,
  );
  return result.map((r) => String(r.id)).sort(compareIds);
}
