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
    throw new CommandError(`cannot use ${describeDatabaseUrl(url)}: ${explain(error)}`);
  }
}

// SQLSTATEs and socket codes a person can act on
const EXPLANATIONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (is PostgreSQL running on that host and port?)',
  ENOTFOUND: 'unknown host',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  '3D000': 'the database does not exist (create it, or fix the name in the URL)',
  '28P01': 'password authentication failed',
  '28000': 'the server refused this user (check pg_hba.conf and the user name)',
  '57P03': 'the server is starting up or shutting down; try again',
};

function explain(error: unknown): string {
  const e = error as { code?: string; message?: string; errors?: unknown[] };
  // node's connect reports an AggregateError (IPv4 + IPv6) whose own message is empty
  const inner = (e.errors?.[0] ?? e) as { code?: string; message?: string };
  const code = e.code ?? inner.code;
  const known = code === undefined ? undefined : EXPLANATIONS[code];
  const text = e.message || inner.message || String(error);
  return known === undefined ? text : `${known} [${code}]`;
}
