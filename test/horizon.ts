// What the tests of claims under a held MVCC horizon share: the session that holds it, and what
// the server counts each index's scans reading.
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterEach } from 'vitest';

/**
 * A session that holds a snapshot, as a long report would: nothing claimed after it can be
 * vacuumed. The caller ends it.
 */
export { holdSnapshot as holdHorizon } from './hold-snapshot.js';

/** Scans of one of `leasehold`'s indexes and the entries they read, as the server counts them (flushed when a session ends). */
export async function indexReads(db: Kysely<object>, index: string): Promise<{ scans: number; entries: number }> {
  const { rows } = await sql<{ scans: string; entries: string }>`
    SELECT idx_scan AS scans, idx_tup_read AS entries FROM pg_stat_user_indexes
    WHERE schemaname = 'leasehold' AND indexrelname = ${index}`.execute(db);
  return { scans: Number(rows[0]!.scans), entries: Number(rows[0]!.entries) };
}

/** What {@link useSessions} gives a test file. */
export interface Sessions {
  /** A pool of its own (a worker's, whose sessions' counts reach the statistics when it ends). */
  newPool(max?: number): pg.Pool;
  /** Ends a pool from {@link newPool} now. */
  endPool(pool: pg.Pool): Promise<void>;
  /** Ends `client` (a session holding the horizon, a producer's open transaction) after the test. */
  endAfter(client: pg.Client): pg.Client;
}

/** Pools and sessions a test opens on `url`, ended after each test whatever it did. */
export function useSessions(url: string): Sessions {
  const pools: pg.Pool[] = [];
  const clients: pg.Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end()));
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });
  return {
    newPool(max = 4) {
      const pool = new pg.Pool({ connectionString: url, max });
      pools.push(pool);
      return pool;
    },
    async endPool(pool) {
      await pool.end();
      pools.splice(pools.indexOf(pool), 1);
    },
    endAfter(client) {
      clients.push(client);
      return client;
    },
  };
}
