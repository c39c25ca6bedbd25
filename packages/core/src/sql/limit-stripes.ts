import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';

/**
 * The smallest concurrency kept in stripes (docs/flow-control.md, "How a large concurrency limit
 * is kept"): below it, claims of a limit take few rows each, and a bound split in four would
 * leave each claim a sliver of it.
 */
export const STRIPED_FROM = 64;

/** How many stripes a striped limit's bound is split into. */
export const STRIPES = 2;

/** How many stripes of a limit one claim locks at most: two claims of it run side by side. */
export const STRIPES_PER_CLAIM = 1;

/** `"schema"."task_limit_stripe"`: the stripes of the table's limits (core migration 20). */
export function stripeTable(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, `${table.limitTable!}_stripe`);
}
