import { sql } from 'kysely';
import { ConfigError } from '../errors.js';
import { execute, type Executor } from '../sql/execute.js';
import type { Listener } from './listener.js';

/** How long a start behind a pooler waits for its test notification, in ms. */
export const LISTEN_PROBE_TIMEOUT_MS = 3_000;

/**
 * Behind a pooler, proves at start that notifications sent through the pool reach the LISTEN
 * connection: a `listenConnectionString` that goes through the pooler too (LISTEN on a server
 * connection that is handed to others), or that reaches another server or database, would
 * otherwise leave the worker waiting for wake-ups that never come, with nothing said. Throws a
 * `ConfigError` for `listenConnectionString` that says what went wrong, with the LISTEN
 * connection's own errors during the start (a refused connection, a failed login).
 * @internal
 */
export async function probeListenPath(listener: Listener, db: Executor, startErrors: readonly Error[]): Promise<void> {
  const arrived = await listener.probe(
    (channel, payload) => execute(db, sql`SELECT pg_notify(${channel}, ${payload})`),
    LISTEN_PROBE_TIMEOUT_MS,
  );
  if (arrived) return;
  const why = listener.listening
    ? `a notification sent through \`pool\` did not arrive on it within ${LISTEN_PROBE_TIMEOUT_MS / 1000} s`
    : `it did not connect${startErrors.length > 0 ? ` (${startErrors.map((e) => e.message).join('; ')})` : ''}`;
  throw new ConfigError(
    'listenConnectionString',
    `The LISTEN connection cannot wake this worker: ${why}. It must reach the pool's database directly, not through the pooler (a pooler in transaction mode never delivers notifications); or leave \`listenConnectionString\` out to poll every \`pollInterval\``,
  );
}

/**
 * What to add to the log line of an error that a pooler in transaction mode causes when the pool
 * is not marked: one of leasehold's named statements missing (26000) or already there (42P05) on
 * the server connection the pooler lent. Empty for any other error.
 * @internal
 */
export function poolerHint(error: Error): string {
  const code = (error as { code?: unknown }).code;
  if ((code !== '26000' && code !== '42P05') || !error.message.includes('leasehold_')) return '';
  return ' (is the pool behind a pooler in transaction mode, such as PgBouncer? Then give it `noPreparedStatements: true`; see docs/operations.md, "Poolers")';
}
