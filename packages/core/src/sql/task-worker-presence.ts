import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { workerTableRef } from './task-worker-list.js';


/**
 * Says that worker `owner` is alive and runs these versions of these task names (`accepts`:
 * name → versions), so that runs of versions no live worker accepts can be shown. @internal
 */
export async function taskWorkerSeen(executor: Executor, table: LeasedTable<unknown>, owner: string, accepts: Readonly<Record<string, readonly number[]>>): Promise<void> {
  await execute(
    executor,
    // rows of workers gone for an hour (killed, so they never deleted theirs) leave with it: the
    // list stays as short as the fleet
    sql`WITH gone AS (DELETE FROM ${workerTableRef(table)} WHERE seen_at < now() - interval '1 hour' AND owner <> ${owner}::text)
        INSERT INTO ${workerTableRef(table)} AS w (owner, accepts, claims_stripes) VALUES (${owner}::text, ${JSON.stringify(accepts)}::jsonb, true)
        ON CONFLICT (owner) DO UPDATE SET accepts = excluded.accepts, claims_stripes = true, seen_at = now()`,
  );
}

/** The worker stopped: its row goes. @internal */
export async function taskWorkerGone(executor: Executor, table: LeasedTable<unknown>, owner: string): Promise<void> {
  await execute(executor, sql`DELETE FROM ${workerTableRef(table)} WHERE owner = ${owner}::text`);
}
