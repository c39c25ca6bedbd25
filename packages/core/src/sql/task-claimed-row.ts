import type { TaskRow } from '../leased-table.js';
import type { Claimed } from './lease-row.js';

/**
 * A claimed row of core's task table, straight from the claim's raw row (its timestamps as
 * epoch milliseconds, `*_ms`, see `claimColumns`): one object with every field, where the
 * generic path maps the table's row and then adds the lease fields to it (a second object, and
 * eight properties added one by one to a full one). The keys come in the generic path's order.
 */
export function claimedTaskRow(raw: Record<string, unknown>, owner: string): Claimed<TaskRow> {
  const parentId = raw.parent_id;
  return {
    name: raw.name as string,
    payload: raw.payload,
    priority: raw.priority as number,
    groupKey: (raw.group_key as string | null) ?? null,
    dedupKey: (raw.dedup_key as string | null) ?? null,
    checkpoint: raw.checkpoint ?? null,
    traceparent: (raw.traceparent as string | null) ?? null,
    tracestate: (raw.tracestate as string | null) ?? null,
    availableAt: new Date(raw.available_at_ms as number),
    parentId: parentId === null || parentId === undefined ? null : String(parentId),
    id: String(raw.id),
    leaseVersion: Number(raw.lease_version),
    attempts: Number(raw.attempts),
    maxAttempts: Number(raw.max_attempts),
    leaseOwner: owner,
    leaseUntil: new Date(raw.lease_until_ms as number),
    createdAt: new Date(raw.created_at_ms as number),
  };
}
