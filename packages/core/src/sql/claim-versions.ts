import { sql, type RawBuilder } from 'kysely';

/**
 * The versions of core's task rows a claim may take (`defineTask`'s `version` and `accepts`, per
 * name). `firstOnly`: every name runs version 1 alone — the common case, one integer comparison
 * per candidate row. Otherwise `keys` lists `<name> <version>` for every pair it runs.
 * @internal
 */
export interface ClaimVersions {
  readonly firstOnly: boolean;
  readonly keys: readonly string[];
  /** The versions per name, as the worker list shows them. */
  readonly byName: Readonly<Record<string, readonly number[]>>;
}

/** `<name> <version>`: one pair a claim may take; unambiguous, since the version is the text after the last space. @internal */
export function versionKey(name: string, version: number): string {
  return `${name} ${version}`;
}

/**
 * The claim's version condition on candidate `c` (appended to its name filter), or nothing
 * without versions. Interpolates `keys` only (see executeCached): the shape is in `versions`.
 * @internal
 */
export function versionFilter(versions: ClaimVersions | undefined, keys: readonly string[], nameColumn: string): RawBuilder<unknown> {
  if (versions === undefined) return sql``;
  if (versions.firstOnly) return sql`AND c.version = 1`;
  return sql`AND (${sql.ref(`c.${nameColumn}`)} || ' ' || c.version) = ANY(${keys}::text[])`;
}
