import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';

/**
 * The smallest concurrency kept in stripes (docs/flow-control.md, "How a large concurrency limit
 * is kept (stripes)"): below it a claim of the limit takes few rows, so its claims overlap
 * little, and half the bound would be a small claim.
 */
export const STRIPED_FROM = 64;

/**
 * How many stripes a striped limit's bound is split into. Two, measured against three, four and
 * eight on two workers (bench/RESULTS.md, issue 32, 2026-12-06): more stripes mean smaller claims,
 * whose fixed cost outweighed the overlap they allow.
 */
export const STRIPES = 2;

/** How many stripes of a limit one claim locks at most: with one, two claims of it run side by side. */
export const STRIPES_PER_CLAIM = 1;

/** A pending row of a limit that a claim could take now, once the limit has room (alias `c`). */
export const LIMITED_READY = sql`c.status = 'pending' AND NOT c.blocked AND NOT c.scheduled`;

/** `"schema"."task_limit_stripe"`: the stripes of the table's limits (core migration 20). */
export function stripeTable(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, `${table.limitTable!}_stripe`);
}
