import type { Executor, LeasedTable } from '@leasehold/core';
import { errorCode, execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** A progress event as the run page shows it: the latest value set under a key (`ctx.setEvent`). */
export interface TaskEventRow {
  readonly key: string;
  readonly value: unknown;
  readonly updatedAt: Date;
  /** The claim that wrote it. */
  readonly leaseVersion: number;
}

// a page of a run never shows more than this many keys (a run sets a handful; this bounds a bug)
const MAX_EVENTS = 200;

/**
 * A task's progress events (core migration 15's `<table>_event`), oldest write first, or null
 * when the schema predates that migration. `id` must be a checked row id. Takes no locks; one
 * range of the table's primary key.
 */
export async function taskEventsList(executor: Executor, table: LeasedTable<unknown>, id: string): Promise<TaskEventRow[] | null> {
  try {
    const rows = await execute<{ key: string; value: unknown; updated_at: Date; lease_version: string | number }>(
      executor,
      sql`
        SELECT key, value, updated_at, lease_version FROM ${sql.id(table.schema, `${table.table}_event`)}
        WHERE task_id = ${id}::bigint ORDER BY updated_at, key LIMIT ${MAX_EVENTS}
      `,
    );
    return rows.map((r) => ({ key: r.key, value: r.value, updatedAt: r.updated_at, leaseVersion: Number(r.lease_version) }));
  } catch (error) {
    // undefined_table: a schema migrated before progress events has none to show
    if (errorCode(error) === '42P01') return null;
    throw error;
  }
}
