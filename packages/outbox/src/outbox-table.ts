import { defineLeasedTable, type LeasedTable } from '@leasehold/core';
import { jsonDate, withClaimJson, type ClaimJson } from '@leasehold/core/internal';

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
  const table = defineLeasedTable<OutboxRow>({
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
  return withClaimJson(table, OUTBOX_CLAIM_JSON);
}

/**
 * Claims of the outbox send their rows as JSON (see core's `claim-json.ts`), each mapped in one
 * object, in the key order of `mapRow` and then the lease fields.
 */
const OUTBOX_CLAIM_JSON: ClaimJson<OutboxRow> = {
  columns: [
    ['aggregate_type', 'text'],
    ['aggregate_id', 'text'],
    ['event_type', 'text'],
    ['payload', 'jsonb'],
    ['headers', 'jsonb'],
    ['priority', 'integer'],
  ],
  fromJson: (v, owner) => ({
    aggregateType: v[7] as string,
    aggregateId: v[8] as string,
    eventType: v[9] as string,
    payload: v[10],
    headers: (v[11] as Record<string, string> | null) ?? {},
    priority: v[12] as number,
    groupKey: v[6] as string | null,
    id: v[0] as string,
    leaseVersion: v[1] as number,
    attempts: v[2] as number,
    maxAttempts: v[3] as number,
    leaseOwner: owner,
    leaseUntil: jsonDate(v[4]) as Date,
    createdAt: jsonDate(v[5]) as Date,
  }),
};
