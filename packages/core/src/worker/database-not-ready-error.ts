import { LeaseholdError } from '../leasehold-error.js';

/** Why a worker's `start()` refused the database. */
export const DATABASE_NOT_READY_REASONS = ['unreachable', 'no-database', 'login-refused', 'not-migrated', 'schema-outdated'] as const;

/** One of {@link DATABASE_NOT_READY_REASONS}. */
export type DatabaseNotReadyReason = (typeof DATABASE_NOT_READY_REASONS)[number];

/** What to do about a schema that is missing or behind; the CLI says the same. */
export const MIGRATE_HINT = 'run "leasehold migrate" or call migrate()';

/**
 * `start()` found the database unusable, and says what to do: the server is unreachable or did
 * not answer (`unreachable`), the database does not exist (`no-database`), the login was refused
 * (`login-refused`), the schema or table was never migrated (`not-migrated`), or a migration line
 * is behind this version of leasehold (`schema-outdated`). The driver's error is the `cause`.
 *
 * @example
 * try {
 *   await worker.start();
 * } catch (error) {
 *   if (error instanceof DatabaseNotReadyError && error.reason === 'not-migrated') await migrate(pool);
 *   else throw error;
 * }
 */
export class DatabaseNotReadyError extends LeaseholdError {
  readonly reason: DatabaseNotReadyReason;

  constructor(reason: DatabaseNotReadyReason, message: string, options?: { cause?: unknown }) {
    super('DATABASE_NOT_READY', message, options);
    this.reason = reason;
  }
}

// Socket codes and SQLSTATEs a person can act on, in words (shared with the CLI's messages).
const EXPLANATIONS: Readonly<Record<string, readonly [DatabaseNotReadyReason, string]>> = {
  ECONNREFUSED: ['unreachable', 'connection refused (is PostgreSQL running on that host and port?)'],
  ENOTFOUND: ['unreachable', 'unknown host'],
  EAI_AGAIN: ['unreachable', 'host name lookup failed'],
  ETIMEDOUT: ['unreachable', 'connection timed out'],
  EHOSTUNREACH: ['unreachable', 'host unreachable'],
  '3D000': ['no-database', 'the database does not exist (create it, or fix the name in the URL)'],
  '28P01': ['login-refused', 'password authentication failed'],
  '28000': ['login-refused', 'the server refused this user (check pg_hba.conf and the user name)'],
  '57P03': ['unreachable', 'the server is starting up or shutting down; try again'],
};

/**
 * Explains a failed connection or statement in words a person can act on, e.g. `connection
 * refused (is PostgreSQL running on that host and port?) [ECONNREFUSED]`, with the reason it
 * stands for; an error it does not know keeps its own message (reason `unreachable`).
 */
export function describeDatabaseError(error: unknown): { readonly reason: DatabaseNotReadyReason; readonly text: string } {
  const code = errorCode(error);
  const known = code === undefined ? undefined : EXPLANATIONS[code];
  if (known) return { reason: known[0], text: `${known[1]} [${code}]` };
  const e = error as { message?: string; errors?: { message?: string }[] };
  return { reason: 'unreachable', text: e.message || e.errors?.[0]?.message || String(error) };
}

/**
 * The error's socket code or SQLSTATE; node reports a failed connect to a name with several
 * addresses (IPv4 + IPv6) as an AggregateError whose own code may be missing.
 */
export function errorCode(error: unknown): string | undefined {
  const e = error as { code?: unknown; errors?: { code?: unknown }[] } | null;
  const code = e?.code ?? e?.errors?.[0]?.code;
  return typeof code === 'string' ? code : undefined;
}
