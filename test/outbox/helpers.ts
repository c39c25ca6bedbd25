// Shared helpers of the outbox integration tests.
import { sql, type Kysely } from 'kysely';

/** Empties the outbox table of the test database (default schema). */
export async function resetOutbox(db: Kysely<object>): Promise<void> {
  await sql`TRUNCATE leasehold.outbox, leasehold.outbox_group`.execute(db);
}

/** One outbox row as stored. */
export interface StoredMessage {
  id: string;
  status: string;
  attempts: number;
  groupKey: string | null;
  lastError: string | null;
  resolution: string | null;
}

/** Reads outbox rows back, by id. */
export async function readMessages(db: Kysely<object>, ids?: readonly string[]): Promise<StoredMessage[]> {
  const { rows } = await sql<{
    id: string; status: string; attempts: number; group_key: string | null; last_error: string | null; resolution: string | null;
  }>`
    SELECT id, status, attempts, group_key, last_error, resolution FROM leasehold.outbox
    WHERE ${ids === undefined ? sql`true` : sql`id = ANY(${[...ids]}::bigint[])`}
    ORDER BY id`.execute(db);
  return rows.map((r) => ({
    id: String(r.id), status: r.status, attempts: r.attempts, groupKey: r.group_key, lastError: r.last_error, resolution: r.resolution,
  }));
}

export { gate } from '../workers.js';

/** Polls `check` until it returns true, or fails after `deadlineMs`. */
export async function waitUntil(check: () => Promise<boolean> | boolean, what: string, deadlineMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > deadlineMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
