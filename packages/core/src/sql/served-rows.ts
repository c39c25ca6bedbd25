import { sql, type RawBuilder } from 'kysely';
import { versionFilter, type ClaimVersions } from './claim-versions.js';

/** Which rows a worker's claims may take: the task names it serves (all when absent) and, per name, the versions its code runs. @internal */
export interface ServedRows {
  readonly names?: readonly string[] | undefined;
  readonly versions?: ClaimVersions | undefined;
}

/** The shape `servedFilter` writes: whether names are filtered, and the versions. @internal */
export interface ServedShape {
  readonly names: boolean;
  readonly versions: ClaimVersions | undefined;
}

/** The values `servedFilter` interpolates. @internal */
export interface ServedFilterValues {
  readonly names: readonly string[];
  readonly versionKeys: readonly string[];
}

/** The served rows' shape, as `servedFilter` and `servedKey` take it. @internal */
export function servedShape(s: ServedRows): ServedShape {
  return { names: s.names !== undefined, versions: s.versions };
}

/** The part of a cached statement's key that the served rows' shape decides: the statements differ by it, not by the names. @internal */
export function servedKey(shape: ServedShape): string {
  const versions = shape.versions;
  return `${shape.names ? 'names' : ''}:${versions === undefined ? '' : versions.firstOnly ? 'v1' : 'vkeys'}`;
}

/** The served rows' values, as the statement's parameters. @internal */
export function servedFilterValues(s: ServedRows): { names: string[]; versionKeys: readonly string[] } {
  return {
    names: s.names === undefined ? [] : [...s.names],
    versionKeys: s.versions === undefined || s.versions.firstOnly ? [] : s.versions.keys,
  };
}

/**
 * The condition on candidate `c` that keeps to the served rows (appended to a `WHERE`), or
 * nothing when the worker serves every name and version. A worker takes only the versions its
 * code runs: the rest wait for workers that run them. Interpolates `v` only (see executeCached).
 * @internal
 */
export function servedFilter(shape: ServedShape, v: ServedFilterValues, nameColumn: string): RawBuilder<unknown> {
  const names = shape.names ? sql`AND ${sql.ref(`c.${nameColumn}`)} = ANY(${v.names}::text[])` : sql``;
  return shape.versions === undefined ? names : sql`${names} ${versionFilter(shape.versions, v.versionKeys, nameColumn)}`;
}
