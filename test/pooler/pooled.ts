// What the pooler test files share: a pool through PgBouncer, marked or not, and a wait.
import pg from 'pg';
import { afterAll } from 'vitest';

/**
 * Returns a function that opens a `pg` pool on `url()` and ends it after the file (before
 * PgBouncer stops, when called after `usePgBouncer()`).
 */
export function usePools(url: () => string): (options?: pg.PoolConfig) => pg.Pool {
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  });
  return (options = {}) => {
    const pool = new pg.Pool({ connectionString: url(), max: 10, ...options });
    pool.on('error', () => undefined);
    pools.push(pool);
    return pool;
  };
}

/** Polls `check` every 20 ms until it returns true, or fails after `deadlineMs`. */
export async function waitUntil(check: () => Promise<boolean> | boolean, what: string, deadlineMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > deadlineMs) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sessions of the server whose last statement was a LISTEN, by client port (PgBouncer's or ours). */
export async function listeningSessions(admin: pg.Pool, database: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN%'`,
    [database],
  );
  return rows[0]!.n;
}
