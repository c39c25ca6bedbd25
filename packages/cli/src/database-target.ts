import { UsageError } from './errors.js';

/** Which PostgreSQL server a command runs against, and how the user named it. */
export type DatabaseTarget =
  | { readonly kind: 'url'; readonly url: string; readonly from: '--database-url' | 'DATABASE_URL' }
  | { readonly kind: 'embedded' };

/**
 * `--database-url` wins over `DATABASE_URL`; `--embedded` asks for a throwaway server. With
 * none of them there is nothing to connect to: a usage error, never a guess.
 */
export function chooseDatabaseTarget(
  options: { readonly databaseUrl: string | undefined; readonly embedded: boolean },
  env: Readonly<Record<string, string | undefined>>,
): DatabaseTarget {
  if (options.embedded) return { kind: 'embedded' };
  if (options.databaseUrl !== undefined) return { kind: 'url', url: checkUrl(options.databaseUrl, '--database-url'), from: '--database-url' };
  const fromEnv = env.DATABASE_URL;
  if (fromEnv !== undefined && fromEnv !== '') return { kind: 'url', url: checkUrl(fromEnv, 'DATABASE_URL'), from: 'DATABASE_URL' };
  throw new UsageError(
    'no database: set DATABASE_URL, pass --database-url postgres://user@host:5432/db, or try --embedded for a throwaway server',
  );
}

/** `url` if it is a postgres:// URL; else a {@link UsageError} naming `source`. */
export function checkUrl(url: string, source: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`${source} is not a URL (expected postgres://user:password@host:5432/database)`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new UsageError(`${source} must start with postgres:// or postgresql://, got ${parsed.protocol}//`);
  }
  return url;
}

/** The URL without its password, for messages. */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
