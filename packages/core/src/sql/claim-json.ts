import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { Claimed } from './lease-row.js';

/**
 * Claimed rows as JSON text, up to {@link CHUNK_ROWS} rows to a protocol row, for the tables
 * leasehold defines (core's task table, the outbox). `pg` parses every protocol row in
 * JavaScript, field by field, and in a fresh worker process most of that cost is warming up its
 * parser; `JSON.parse` reads a chunk natively. Building the JSON costs the server more than
 * sending the columns (some 2 µs a row), the worker process far less (bench/RESULTS.md: two
 * worker processes draining 10,000 tasks each spent a third less CPU, the whole run 13 % less).
 * A row whose text exceeds {@link CHUNK_BYTES} gets a chunk of its own, so no chunk is much
 * larger than its largest row (which `pg` would have held as one string all the same).
 */
export const CHUNK_ROWS = 64;
export const CHUNK_BYTES = 65_536;

/** SQL types a value of a claimed row's JSON can have. */
export type ClaimJsonType = 'text' | 'jsonb' | 'integer' | 'bigint' | 'timestamptz';

/**
 * How claims send a table's rows as JSON: the columns each row carries after the lease values,
 * and the claimed row made from all of them. @internal
 */
export interface ClaimJson<Row> {
  /** Columns after the lease values, each with its SQL type. */
  readonly columns: readonly (readonly [column: string, type: ClaimJsonType])[];
  /**
   * The claimed row from `[id, leaseVersion, attempts, maxAttempts, leaseUntil, createdAt,
   * groupKey, ...columns]`: `id` and other bigints as strings (`leaseVersion` a number), a
   * timestamp as epoch milliseconds (see {@link jsonDate}), NULL as null, jsonb parsed.
   */
  readonly fromJson: (values: readonly unknown[], owner: string) => Claimed<Row>;
  /**
   * What a claim adds for rows resumed where an earlier lease left off, when the table keeps
   * such records (core's tasks: a workflow run's; see task-claim-json.ts): a value appended to
   * each row's JSON (from the `claimed` CTE's row `o`, at `fromJson`'s next index; `resumable` is
   * the condition under which the row may carry it), and CTEs to follow `claimed`.
   */
  readonly resumed?: ((table: LeasedTable<unknown>, resumable: RawBuilder<unknown>) => ResumedParts) | undefined;
}

/** See {@link ClaimJson.resumed}. */
export interface ResumedParts {
  /** A JSON text value, for every claimed row (`'null'` for one that carries nothing). */
  readonly value: RawBuilder<unknown>;
  /** A boolean, returned by `claimed` as `resumed`: whether the row carries its records. */
  readonly resumed: RawBuilder<unknown>;
  /** `, name AS (…)` CTEs that follow `claimed`, or nothing. */
  readonly ctes: RawBuilder<unknown>;
}

/** One claimed row (alias `o`, after the claim's update) as a JSON array (see {@link ClaimJson.fromJson}). */
export function jsonRowText(json: ClaimJson<unknown>, extra?: RawBuilder<unknown>): RawBuilder<unknown> {
  const values = [
    encode('id', 'bigint'),
    encode('lease_version', 'integer'),
    encode('attempts', 'integer'),
    encode('max_attempts', 'integer'),
    encode('lease_until', 'timestamptz'),
    encode('created_at', 'timestamptz'),
    encode('group_key', 'text'),
    ...json.columns.map(([column, type]) => encode(column, type)),
    ...(extra === undefined ? [] : [extra]),
  ];
  return sql`'[' || ${sql.join(values, sql` || ',' || `)} || ']'`;
}

// Each value as the JSON text of what `pg` would have parsed it to. Concatenation, not
// json_build_array or concat(): those look up each argument's output function per row and cost
// the server about a microsecond more per row.
function encode(column: string, type: ClaimJsonType): RawBuilder<unknown> {
  const c = sql.ref(`o.${column}`);
  switch (type) {
    case 'text':
      return sql`coalesce(to_json(${c})::text, 'null')`;
    case 'jsonb':
    case 'integer':
      return sql`coalesce(${c}::text, 'null')`;
    case 'bigint':
      return sql`coalesce('"' || ${c} || '"', 'null')`;
    case 'timestamptz':
      // epoch ms with the fraction (a Date drops it); an infinite one, which no Date holds, as a
      // string (an invalid Date, as `pg` would give one through the epoch)
      return sql`CASE WHEN isfinite(${c}) THEN (date_part('epoch', ${c}) * 1000)::text WHEN ${c} IS NULL THEN 'null' ELSE '"infinite"' END`;
  }
}

/**
 * The claimed rows' JSON (the `claimed` CTE's column `j`) as chunks: a JSON array of at most
 * {@link CHUNK_ROWS} rows (ids fall in one bucket of that width), or of one larger row alone.
 */
export function jsonChunks(): { readonly text: RawBuilder<unknown>; readonly groupBy: RawBuilder<unknown> } {
  return {
    text: sql`'[' || string_agg(claimed.j, ',') || ']'`,
    groupBy: sql`CASE WHEN octet_length(claimed.j) > ${sql.lit(CHUNK_BYTES)} THEN -claimed.id ELSE claimed.id / ${sql.lit(CHUNK_ROWS)} END`,
  };
}

/** Adds the claimed rows of one chunk to `into`. */
export function claimedFromChunk<Row>(json: ClaimJson<Row>, chunk: string, owner: string, into: Claimed<Row>[]): void {
  for (const values of JSON.parse(chunk) as unknown[][]) into.push(json.fromJson(values, owner));
}

/** A Date from a timestamp's JSON value: epoch milliseconds, `"infinite"` (an invalid Date) or null. */
export function jsonDate(value: unknown): Date | null {
  if (value === null) return null;
  return new Date(typeof value === 'number' ? value : Number.NaN);
}
