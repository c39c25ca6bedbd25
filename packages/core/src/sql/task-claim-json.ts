import { sql } from 'kysely';
import type { TaskRow } from '../leased-table.js';
import type { Claimed } from './lease-row.js';
import { jsonDate, type ClaimJson } from './claim-json.js';
import { claimedRecords, recordedFromJson } from './claimed-records.js';
import { tableRef } from './table-ref.js';
import { stepTableRef } from './task-steps.js';

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
  fromJson: (v, owner) => {
    const row: Claimed<TaskRow> = {
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
    };
    if (v[16] !== null && v[16] !== undefined) claimedRecords.set(row, recordedFromJson(v[16] as readonly (readonly unknown[])[]));
    return row;
  },
  // A workflow run resumed where a parked, failed or released lease left off carries what it
  // recorded, read by the claim (it starts without a replay read of its own), and the claim closes
  // its sleep whose wake time has passed, as that read would have (taskStepsReadMany). Only for a
  // row no other lease took between this statement's snapshot and its lock (the row's version in
  // the snapshot is the one before the claim's): records that lease wrote would be missing here.
  // A sleeping run taken ahead of its wake (LeaseClaimInput.aheadMs) starts at its row's time,
  // its sleep's wake time: the sleep is over by then, so it is closed as one that ended.
  resumed: (table, resumable) => {
    const steps = stepTableRef(table);
    const resumed = sql`(o.lease_version > 1 AND ${resumable} AND o.lease_version = (SELECT x.lease_version FROM ${tableRef(table)} AS x WHERE x.id = o.id) + 1)`;
    return {
      resumed,
      value: sql`CASE WHEN ${resumed} THEN coalesce((
          SELECT json_agg(json_build_array(p.name, p.done OR (p.kind = 'sleep' AND p.wake_at <= greatest(now(), o.available_at)), p.result, p.result IS NULL, p.position, p.kind))::text
          FROM ${steps} AS p WHERE p.task_id = o.id), '[]') ELSE 'null' END`,
      // by the steps' primary key, one probe per resumed run: never a join that could scan them
      ctes: sql`, resumed_slept AS (
        UPDATE ${steps} AS p SET done = true, lease_version = (SELECT c.lease_version FROM claimed AS c WHERE c.id = p.task_id), done_at = greatest(now(), p.wake_at)
        WHERE p.task_id = ANY(ARRAY(SELECT c.id FROM claimed AS c WHERE c.resumed))
          AND p.kind = 'sleep' AND NOT p.done
          -- the row's time is looked up only for a sleep not yet over (one taken ahead)
          AND (p.wake_at <= now() OR p.wake_at <= (SELECT x.available_at FROM ${tableRef(table)} AS x WHERE x.id = p.task_id))
        RETURNING 1
      )`,
    };
  },
};
