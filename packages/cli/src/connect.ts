import { describeDatabaseError } from '@leasehold/core/internal';
import pg from 'pg';
import { describeDatabaseUrl } from './database-target.js';
import { CommandError } from './errors.js';
import { serverInfo } from './sql/server-info.js';

/** An open pool and what the server said about itself. */
export interface Connection {
  readonly pool: pg.Pool;
  /** e.g. `18.1` */
  readonly serverVersion: string;
  readonly database: string;
}

/**
 * Opens a small pool and runs one query, so an unreachable server, a missing database or a
 * refused login is reported here, in words, instead of from the middle of a command.
 */
export async function connect(url: string): Promise<Connection> {
  const pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 10_000 });
  // A client whose server went away (e.g. the throwaway one stopping on Ctrl-C) emits 'error':
  // idle ones through the pool, checked-out ones on themselves, where an unhandled 'error' would
  // end the process. Their next statement fails anyway, so nothing is lost by listening.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    const info = await serverInfo(pool);
    return { pool, serverVersion: info.serverVersion, database: info.database };
  } catch (error) {
    await pool.end().catch(() => undefined);
    // the words a worker's start() uses for the same failure (core's DatabaseNotReadyError)
    throw new CommandError(`cannot use ${describeDatabaseUrl(url)}: ${describeDatabaseError(error).text}`);
  }
}
