import { ConfigError } from './errors.js';

// Lower-case SQL identifiers only: they need no quoting rules and cannot smuggle quotes,
// semicolons or case tricks into a statement.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/;

/**
 * Checks a schema or table name supplied by a user, or throws a `ConfigError` naming `option`.
 * Validated names are the only ones that ever reach SQL, and always through `sql.id`.
 */
export function validateIdentifier(value: unknown, option: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    throw new ConfigError(
      option,
      `Expected \`${option}\` to be a lower-case SQL identifier (letters, digits, _; at most 48 characters), got ${JSON.stringify(value)}`,
    );
  }
  if (value.startsWith('pg_')) {
    throw new ConfigError(option, `Expected \`${option}\` not to start with pg_ (reserved by PostgreSQL), got ${JSON.stringify(value)}`);
  }
  return value;
}
