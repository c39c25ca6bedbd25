import { LeaseholdError } from '../leasehold-error.js';

/** Why a worker's `start()` refused the database. */
export const DATABASE_NOT_READY_REASONS = ['unreachable', 'no-database', 'login-refused', 'not-migrated', 'schema-outdated'] as const;

/** One of {@link DATABASE_NOT_READY_REASONS}. */
export type DatabaseNotReadyReason = (typeof DATABASE_NOT_READY_REASONS)[number];

/** What to do about a schema that is missing or behind; the CLI says the same. */
export const MIGRATE_HINT = 'run "leasehold migrate" or call migrate()';

/**
 * The database is unusable, and the error says what to do: the server is unreachable or did not
 * answer (`unreachable`), the database does not exist (`no-database`), the login was refused
 * (`login-refused`), the schema or a table was never migrated (`not-migrated`), or a migration
 * line is behind this version of leasehold (`schema-outdated`). The driver's error is the `cause`
 * (its SQLSTATE or socket code also in {@link DatabaseNotReadyError.driverCode}).
 *
 * A worker's (or dispatcher's, or scheduler's) `start()` checks for all five before it claims.
 * Every other call that reaches the database — `enqueue`, `enqueueMany`, `migrate`, `getTask`,
 * `sendSignal`, `leaseDeadList`, the outbox's `add`… — throws it when PostgreSQL answers one of
 * those faults (SQLSTATE `42P01`/`3F000` for a missing table or schema, `3D000`, `28P01`/`28000`,
 * or a refused or unresolvable connection), instead of the driver's raw error. Inside the
 * caller's transaction it aborts that transaction as the raw error did.
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
  /** The driver's SQLSTATE or socket code (`42P01`, `ECONNREFUSED`), when the fault came with one. */
  readonly driverCode: string | undefined;

  constructor(reason: DatabaseNotReadyReason, message: string, options?: { cause?: unknown }) {
    super('DATABASE_NOT_READY', message, options);
    this.reason = reason;
    this.driverCode = options?.cause === undefined ? undefined : errorCode(options.cause);
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
  // the server's message names the relation or schema: it is kept in front of these words
  '42P01': ['not-migrated', `the schema is not migrated, or is older than this version of leasehold: ${MIGRATE_HINT}`],
  '3F000': ['not-migrated', `the schema is not migrated: ${MIGRATE_HINT}`],
};

// the SQLSTATEs whose server message says what is missing
const NAMES_WHAT: ReadonlySet<string> = new Set(['42P01', '3F000']);

/**
 * Explains a failed connection or statement in words a person can act on, e.g. `connection
 * refused (is PostgreSQL running on that host and port?) [ECONNREFUSED]`, with the reason it
 * stands for; an error it does not know keeps its own message (reason `unreachable`).
 */
export function describeDatabaseError(error: unknown): { readonly reason: DatabaseNotReadyReason; readonly text: string } {
  const raw = driverError(error);
  const code = errorCode(raw);
  const known = code === undefined ? undefined : EXPLANATIONS[code];
  const e = raw as { message?: string; errors?: { message?: string }[] } | null;
  if (known) return { reason: known[0], text: `${NAMES_WHAT.has(code!) && e?.message ? `${e.message}: ` : ''}${known[1]} [${code}]` };
  return { reason: 'unreachable', text: e?.message || e?.errors?.[0]?.message || String(raw) };
}

/**
 * The error's socket code or SQLSTATE; node reports a failed connect to a name with several
 * addresses (IPv4 + IPv6) as an AggregateError whose own code may be missing. For a
 * {@link DatabaseNotReadyError} made from a driver's error, that error's code.
 */
export function errorCode(error: unknown): string | undefined {
  const e = driverError(error) as { code?: unknown; errors?: { code?: unknown }[] } | null;
  const code = e?.code ?? e?.errors?.[0]?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The driver's error a {@link DatabaseNotReadyError} wraps, else `error` itself. */
function driverError(error: unknown): unknown {
  return error instanceof DatabaseNotReadyError && error.cause !== undefined ? error.cause : error;
}

/**
 * What a failed statement or connect throws out of leasehold: a {@link DatabaseNotReadyError}
 * when the driver's error is one of the faults it explains (a missing table or schema, database
 * or login, a refused or unresolvable server), else the error unchanged. Runs only on the error
 * path of `execute` and of a transaction's connect; `executor` names the database in the message
 * when it is a pool.
 * @internal
 */
export function asDatabaseNotReady(error: unknown, executor?: object): unknown {
  if (error instanceof LeaseholdError) return error;
  const code = errorCode(error);
  if (code === undefined || !Object.hasOwn(EXPLANATIONS, code)) return error;
  const { reason, text } = describeDatabaseError(error);
  const target = executor === undefined ? 'the database' : describeTarget(executor);
  return new DatabaseNotReadyError(reason, `cannot use ${target}: ${text}`, { cause: error });
}

/** The database a pg pool connects to, for messages: its URL without the password, or host:port/database. */
export function describeTarget(pool: object): string {
  const options = (pool as { options?: { connectionString?: string; host?: string; port?: number; database?: string } }).options;
  if (options?.connectionString) {
    try {
      const url = new URL(options.connectionString);
      if (url.password) url.password = '***';
      return url.toString();
    } catch {
      // not a URL: fall through to the parts
    }
  }
  if (options?.host !== undefined || options?.database !== undefined) {
    return `${options.host ?? 'localhost'}:${options.port ?? 5432}/${options.database ?? ''}`;
  }
  return 'the database';
}
