// What the tests of claims under a held MVCC horizon share: the session that holds it, and what
// the server counts each index's scans reading.
import { sql, type Kysely } from 'kysely';
import pg from 'pg';

/**
 * A session that holds a snapshot, as a long report would: nothing claimed after it can be
 * vacuumed. The caller ends it.
 */
export async function holdHorizon(url: string, applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  await client.connect();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query('SELECT count(*) FROM pg_class');
  return client;
}

/** Scans of one of `leasehold`'s indexes and the entries they read, as the server counts them (flushed when a session ends). */
export async function indexReads(db: Kysely<object>, index: string): Promise<{ scans: number; entries: number }> {
  const { rows } = await sql<{ scans: string; entries: string }>`
    SELECT idx_scan AS scans, idx_tup_read AS entries FROM pg_stat_user_indexes
    WHERE schemaname = 'leasehold' AND indexrelname = ${index}`.execute(db);
  return { scans: Number(rows[0]!.scans), entries: Number(rows[0]!.entries) };
}
