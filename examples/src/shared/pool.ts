import pg from 'pg';

/**
 * A `pg` pool that survives its server going away. node-postgres emits `error` on a client
 * when the server ends its session (shutdown, failover, a killed backend); a client that is
 * idle in the pool is covered by the pool's `error` event, but one checked out between two
 * statements (an open transaction, a LISTEN connection) has no listener, and an unhandled
 * `error` event ends the process. The next statement on such a client fails anyway, so these
 * listeners lose nothing: errors still reach the code that uses the client.
 */
export function createPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
