import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, type Executor } from './execute.js';
import { toClaimed, type Claimed } from './lease-row.js';
import { LEASE_COLUMNS, returningColumns, tableRef } from './table-ref.js';

/** Checked inputs of {@link leaseClaim}. */
export interface LeaseClaimInput {
  /** Written to `lease_owner`, for people; correctness rests on `lease_version`. */
  readonly owner: string;
  /** Most rows to take. */
  readonly batch: number;
  /** Lease length in ms, counted from the database's `now()`. */
  readonly leaseMs: number;
  /** Only rows whose name column is one of these; all rows when omitted. */
  readonly names?: readonly string[] | undefined;
  /** Lease per name, where it differs from `leaseMs`. */
  readonly leaseMsByName?: ReadonlyMap<string, number> | undefined;
}

/** A row that reap moved to `dead` because its lease ran out on its last attempt. */
export interface ReapedRow {
  readonly id: string;
  readonly leaseVersion: number;
}

/** What one claim statement did. */
export interface LeaseClaimResult<Row> {
  /** Rows now owned by this claim, sorted by id. */
  readonly claimed: Claimed<Row>[];
  /** Rows the reap step sent to `dead`. */
  readonly reaped: ReapedRow[];
}

export const REAP_ERROR = 'lease expired after max attempts (worker crash?)';

/**
 * Reap, then claim, in one statement (so one short transaction; nothing is held afterwards).
 *
 * Reap: a `processing` row whose lease expired with `attempts >= max_attempts` goes `dead`
 * (a poison task that kills its worker every time stops there). Claim: up to `batch` rows,
 * highest `priority` first, then lowest id, taken from three sources — `pending` rows due now
 * (index `<table>_claim`), `pending` rows that were scheduled for later and are due by now
 * (`<table>_due`), and `processing` rows whose lease expired with attempts left (a crashed
 * worker's, `<table>_leased`). Each becomes `processing` for `owner` until `now() + lease`, with
 * `lease_version + 1` and `attempts + 1`. A row waiting behind its ordering group's head is
 * `blocked` and in none of those indexes, nor is a row not yet due or a finished one: what the
 * claim walks follows what it can take, however long a blocked group or a schedule grows.
 *
 * Locks: the reaped rows and, `FOR UPDATE SKIP LOCKED`, up to `batch` candidates per source, so
 * concurrent claims never take the same row and never wait for each other; candidates not picked
 * are released at commit. Reap and claim touch disjoint rows (attempts at the maximum vs below).
 */
export async function leaseClaim<Row>(
  executor: Executor,
  table: LeasedTable<Row>,
  input: LeaseClaimInput,
): Promise<LeaseClaimResult<Row>> {
  const t = tableRef(table);
  const nameFilter =
    input.names === undefined
      ? sql``
      : sql`AND ${sql.ref(`c.${table.nameColumn}`)} = ANY(${[...input.names]}::text[])`;
  const byName = input.leaseMsByName;
  const leaseMs =
    byName === undefined || byName.size === 0
      ? sql`${input.leaseMs}`
      : sql`coalesce((SELECT x.ms FROM unnest(${[...byName.keys()]}::text[], ${[...byName.values()]}::float8[]) AS x(name, ms)
                      WHERE x.name = ${sql.ref(`o.${table.nameColumn}`)}), ${input.leaseMs})`;
  const rows = await execute<Record<string, unknown>>(
    executor,
    sql`
      WITH doomed AS (
        SELECT id FROM ${t}
        WHERE status = 'processing' AND lease_until < now() AND attempts >= max_attempts
        FOR UPDATE SKIP LOCKED
      ), reaped AS (
        UPDATE ${t} AS r
        SET status = 'dead', last_error = ${REAP_ERROR}, lease_owner = NULL, lease_until = NULL
        FROM doomed WHERE r.id = doomed.id
        RETURNING r.id, r.lease_version
      ), ready AS (
        SELECT c.id, c.priority FROM ${t} AS c
        WHERE c.status = 'pending' AND NOT c.blocked AND NOT c.scheduled
          -- written as due; only a clock stepped back could make it early
          AND c.available_at <= now() ${nameFilter}
        ORDER BY c.priority DESC, c.id
        LIMIT ${input.batch}
        FOR UPDATE SKIP LOCKED
      ), due AS (
        SELECT c.id, c.priority FROM ${t} AS c
        WHERE c.status = 'pending' AND c.scheduled AND NOT c.blocked AND c.available_at <= now() ${nameFilter}
        ORDER BY c.available_at, c.id
        LIMIT ${input.batch}
        FOR UPDATE SKIP LOCKED
      ), expired AS (
        -- a crashed worker's row: lease expired, attempts left
        SELECT c.id, c.priority FROM ${t} AS c
        WHERE c.status = 'processing' AND c.lease_until < now() AND c.attempts < c.max_attempts ${nameFilter}
        ORDER BY c.lease_until, c.id
        LIMIT ${input.batch}
        FOR UPDATE SKIP LOCKED
      ), picked AS (
        SELECT id FROM (SELECT * FROM ready UNION ALL SELECT * FROM due UNION ALL SELECT * FROM expired) AS candidate
        ORDER BY priority DESC, id
        LIMIT ${input.batch}
      ), claimed AS (
        UPDATE ${t} AS o
        SET status = 'processing',
            scheduled = false,
            lease_owner = ${input.owner},
            lease_until = now() + ${leaseMs} * interval '1 millisecond',
            lease_version = o.lease_version + 1,
            attempts = o.attempts + 1
        FROM picked WHERE o.id = picked.id
        RETURNING ${returningColumns(table, 'o')}
      )
      SELECT true AS claimed, claimed.* FROM claimed
      UNION ALL
      SELECT false AS claimed, ${reapedColumns(table)} FROM reaped
    `,
  );
  const claimed: Claimed<Row>[] = [];
  const reaped: ReapedRow[] = [];
  for (const raw of rows) {
    if (raw.claimed) claimed.push(toClaimed(table, raw));
    else reaped.push({ id: String(raw.id), leaseVersion: Number(raw.lease_version) });
  }
  // RETURNING has no order; the design article sorts by id
  claimed.sort((a, b) => compareIds(a.id, b.id));
  return { claimed, reaped };
}

/** Orders bigint ids given as strings. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

// The UNION needs the reaped branch to have the claimed branch's columns; only id and
// lease_version carry meaning there.
function reapedColumns(table: LeasedTable<unknown>) {
  const extra = table.extraColumns.filter((c) => !LEASE_COLUMNS.includes(c));
  return sql.join([
    sql`reaped.id`,
    sql`reaped.lease_version`,
    sql`NULL::integer`,
    sql`NULL::integer`,
    sql`NULL::text`,
    sql`NULL::timestamptz`,
    sql`NULL::timestamptz`,
    sql`NULL::text`,
    ...extra.map(() => sql`NULL`),
  ]);
}
