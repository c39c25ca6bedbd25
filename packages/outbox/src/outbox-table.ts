import { defineLeasedTable, type LeasedTable } from '@leasehold/core';

/** An outbox row as claimed, beyond the lease columns core adds (`id`, `attempts`, …). */
export interface OutboxRow {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly priority: number;
  /** `aggregate_type:aggregate_id` for an ordered event type, else null. */
  readonly groupKey: string | null;
}

/**
 * The outbox table of `schema`, described for core's lease machinery: core's claim, reap,
 * fenced finalize and heartbeat run on it unchanged, and workers filter on `event_type`.
 *
 * @example
 * const claimed = await claim(pool, { table: outboxTable('leasehold'), owner: 'w1', batch: 10, lease: '60s' });
 */
export function outboxTable(schema = 'leasehold'): LeasedTable<OutboxRow> {
  return defineLeasedTable<OutboxRow>({
    schema,
    table: 'outbox',
    nameColumn: 'event_type',
    extraColumns: ['aggregate_type', 'aggregate_id', 'event_type', 'payload', 'headers', 'priority', 'group_key'],
    mapRow: (raw) => ({
      aggregateType: raw.aggregate_type as string,
      aggregateId: raw.aggregate_id as string,
      eventType: raw.event_type as string,
      payload: raw.payload,
      headers: (raw.headers as Record<string, string> | null) ?? {},
      priority: raw.priority as number,
      groupKey: (raw.group_key as string | null) ?? null,
    }),
  });
}
