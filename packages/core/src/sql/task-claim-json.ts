import type { TaskRow } from '../leased-table.js';
import { jsonDate, type ClaimJson } from './claim-json.js';

/**
 * Claims of core's task table send their rows as JSON (see `claim-json.ts`), each mapped in one
 * object with every field, in the key order of the generic path (`mapRow`, then the lease fields).
 */
export const TASK_CLAIM_JSON: ClaimJson<TaskRow> = {
  columns: [
    ['name', 'text'],
    ['payload', 'jsonb'],
    ['priority', 'integer'],
    ['dedup_key', 'text'],
    ['checkpoint', 'jsonb'],
    ['traceparent', 'text'],
    ['tracestate', 'text'],
    ['available_at', 'timestamptz'],
    ['parent_id', 'bigint'],
  ],
  fromJson: (v, owner) => ({
    name: v[7] as string,
    payload: v[8],
    priority: v[9] as number,
    groupKey: v[6] as string | null,
    dedupKey: v[10] as string | null,
    checkpoint: v[11],
    traceparent: v[12] as string | null,
    tracestate: v[13] as string | null,
    availableAt: jsonDate(v[14]) as Date,
    parentId: v[15] as string | null,
    id: v[0] as string,
    leaseVersion: v[1] as number,
    attempts: v[2] as number,
    maxAttempts: v[3] as number,
    leaseOwner: owner,
    leaseUntil: jsonDate(v[4]) as Date,
    createdAt: jsonDate(v[5]) as Date,
  }),
};
