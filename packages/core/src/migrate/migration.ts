/** One numbered schema change of a package's migration line. Frozen once released. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** SQL with the schema written as `:SCHEMA`. */
  readonly sql: string;
}
