// Every bound on what a caller hands leasehold, in one place: the checks in this folder read
// them from here, the packages' READMEs print them, and nothing else states them again.

/** A closed range of whole numbers. */
export interface IntegerRange {
  readonly min: number;
  readonly max: number;
}

/**
 * Bounds on strings and JSON values that reach a text column or a jsonb value. Text is measured
 * in UTF-8 bytes, as PostgreSQL stores it.
 *
 * @example
 * if (Buffer.byteLength(key) > INPUT_LIMITS.keyBytes) shorten(key);
 */
export const INPUT_LIMITS = Object.freeze({
  /** Task names, owners, aggregate types, event types, header names. */
  nameBytes: 200,
  /**
   * Group and dedup keys, aggregate ids, inbox message ids. They are indexed, and a btree entry
   * is bounded (about 2,700 bytes); an outbox group key (`type:id`) stays under it too.
   */
  keyBytes: 1_024,
  /** One header value of an outbox event. */
  headerValueBytes: 8_192,
  /** Headers on one outbox event. */
  headerCount: 100,
  /**
   * A payload's JSON text. jsonb stores a value in at most 256 MiB, and its binary form can be
   * up to six times its text (an array of small numbers): this bound keeps every accepted
   * payload storable.
   */
  jsonBytes: 32 * 1024 * 1024,
  /**
   * Arrays and objects nested in a payload (`[[1]]` is 2). Every tool on a payload's way
   * recurses per level: V8's `JSON.stringify` runs out of stack at a few thousand levels, fewer
   * inside a deep call stack such as a worker's; PostgreSQL's jsonb functions, validators and
   * receivers' parsers have limits of their own. A payload within this depth goes through
   * enqueue, claim, publish and receive; a deeper one is refused where it enters.
   */
  jsonDepth: 256,
  /** Schema, table and column names. */
  identifierLength: 48,
  /** Why a person retried or skipped a dead row: kept in `resolution`. */
  reasonBytes: 2_000,
  /** A duration that drives a timer: Node fires a longer `setTimeout` after 1 ms. ≈ 24.8 days. */
  timerMs: 2_147_483_647,
  /** A delay kept in the database (run-at, backoff, defer, defer age): 100 years. */
  delayMs: 100 * 365 * 86_400_000,
});

/** Bounds on whole-number options, by option. */
export const INTEGER_RANGES = Object.freeze({
  /** A PostgreSQL `integer` column. */
  priority: { min: -2_147_483_648, max: 2_147_483_647 },
  /** Attempts before a task or message goes dead. */
  maxAttempts: { min: 1, max: 1_000_000 },
  /** A task definition's `version` (a PostgreSQL `integer` column, from 1). */
  version: { min: 1, max: 2_147_483_647 },
  /** Rows per claim or page. */
  batch: { min: 1, max: 10_000 },
  /** Handlers running at once. */
  concurrency: { min: 1, max: 10_000 },
  /**
   * Starts per period of a rate limit (`defineLimit`): the claim keeps each start of the window
   * in the limit's row.
   */
  rateLimit: { min: 1, max: 10_000 },
  /** Claimed rows kept ready beyond the running ones. */
  prefetch: { min: 0, max: 10_000 },
  /** Rows deleted per statement by a purge. */
  purgeBatchSize: { min: 1, max: 100_000 },
  /** Row ids per dead-letter call (retry, skip). */
  idsPerCall: { min: 1, max: 10_000 },
  /** A fencing token's version (a `bigint` column, read into a JS number). */
  leaseVersion: { min: 0, max: Number.MAX_SAFE_INTEGER },
  /** Bytes of a response body an HTTP publisher reads. */
  maxBodyBytes: { min: 0, max: 16 * 1024 * 1024 },
  /** Characters of a response body kept in an error. */
  excerptLength: { min: 0, max: 100_000 },
} satisfies Record<string, IntegerRange>);

/** Largest row id: ids are PostgreSQL `bigint`s. */
export const MAX_ROW_ID = 9_223_372_036_854_775_807n;
