import { ConfigError } from '../leasehold-error.js';
import { INPUT_LIMITS } from './limits.js';

// Lower-case SQL identifiers only: they need no quoting rules and cannot smuggle quotes,
// semicolons or case tricks into a statement.
const IDENTIFIER = new RegExp(`^[a-z_][a-z0-9_]{0,${INPUT_LIMITS.identifierLength - 1}}$`);

/**
 * Checks a schema or table name supplied by a user, or throws a `ConfigError` naming `option`.
 * Validated names are the only ones that ever reach SQL, and always through `sql.id`.
 *
 * @example
 * const schema = validateIdentifier(options.schema ?? 'leasehold', 'schema');
 */
export function validateIdentifier(value: unknown, option: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    throw new ConfigError(
      option,
      `Expected \`${option}\` to be a lower-case SQL identifier (letters, digits, _; at most ${INPUT_LIMITS.identifierLength} characters), got ${JSON.stringify(value)}`,
    );
  }
  if (value.startsWith('pg_')) {
    throw new ConfigError(option, `Expected \`${option}\` not to start with pg_ (reserved by PostgreSQL), got ${JSON.stringify(value)}`);
  }
  return value;
}
