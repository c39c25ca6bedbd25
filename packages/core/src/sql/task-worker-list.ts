import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';

/** A live worker as it reported itself in `task_worker` (core migration 11). */
export interface LiveWorker {
  /** The worker's owner id, as its leases carry it. */
  readonly owner: string;
  /** Per task name, the versions its definitions accept. */
  readonly accepts: Readonly<Record<string, readonly number[]>>;
  readonly startedAt: Date;
  /** When it last reported (every half minute while it runs). */
  readonly seenAt: Date;
}

/** `"schema"."<table>_worker"`: the live workers of a task table and the versions they accept. */
export function workerTableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, `${table.table}_worker`);
}

/** The workers seen within `liveWithinMs`, by owner. Takes no locks. */
export async function taskWorkerList(executor: Executor, table: LeasedTable<unknown>, liveWithinMs: number): Promise<LiveWorker[]> {
  const rows = await execute<{ owner: string; accepts: Record<string, number[]>; started_at: Date; seen_at: Date }>(
    executor,
    sql`
      SELECT owner, accepts, started_at, seen_at FROM ${workerTableRef(table)}
      WHERE seen_at > now() - ${liveWithinMs}::float8 * interval '1 millisecond'
      ORDER BY owner
    `,
  );
  return rows.map((r) => ({ owner: r.owner, accepts: r.accepts, startedAt: r.started_at, seenAt: r.seen_at }));
}
