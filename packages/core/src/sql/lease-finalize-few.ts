import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { bigintArray } from './bigint-array.js';
import { executeCached, type Executor } from './execute.js';
import { fence, statusIs } from './fence.js';
import type { FinalizeItem, FinalizeResult } from './lease-finalize-many.js';
import { tokenKey } from './lease-row.js';
import { tableRef } from './table-ref.js';

/** At most this many rows go through {@link finalizeFewDone}; more take the many-row statement. */
export const FEW_ROWS = 16;

/**
 * What every fenced write of `done` rows sets, the result taken from `result` when given (an
 * expression of the statement: a parameter, or a column of its input). The many-row statement's
 * too.
 * @internal
 */
export function doneSet(result?: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`status = 'done', done_at = now(), last_error = NULL, lease_owner = NULL, lease_until = NULL${result === undefined ? sql`` : sql`, result = ${result}`}`;
}

/** The result an item going `done` stores (its JSON text), or null. @internal */
export function resultJsonOf(item: FinalizeItem): string | null {
  return item.transition.to === 'done' ? item.transition.resultJson : null;
}

/**
 * The fenced write of a few rows, every one going `done` and none under a limit, as a worker at
 * low load writes its completions: one to a handful per statement. The many-row statement's
 * CTEs and anti-join (which spare the worker a row per task when a write carries hundreds)
 * cost PostgreSQL more to plan than to run at this size, and the write is planned at every call
 * (see `ExecuteOptions.prepare`). One row is a plain `UPDATE` by primary key under the
 * {@link fence}; a few are joined to their tokens and return the ones written
 * (bench/RESULTS.md, issue 35). `sorted` holds `items` in id order, as every fenced write sends its
 * rows; the results come in the order of `items`.
 * @internal
 */
export async function finalizeFewDone(
  executor: Executor,
  table: LeasedTable<unknown>,
  items: readonly FinalizeItem[],
  sorted: readonly FinalizeItem[],
  withResults: boolean,
): Promise<FinalizeResult[]> {
  const t = tableRef(table);
  let written: readonly { id: string; version: string }[];
  if (sorted.length === 1) {
    const item = sorted[0]!;
    written = await executeCached(
      executor,
      `leaseFinalizeOneDone:${table.schema}.${table.table}:${withResults ? 'result' : ''}`,
      (v: { id: string; version: number; result: string | null }) => sql<{ id: string; version: string }>`
        UPDATE ${t} AS t
        SET ${doneSet(withResults ? sql`${v.result}::jsonb` : undefined)}
        WHERE ${fence('t', sql`${v.id}::bigint`, sql`${v.version}::bigint`)}
        RETURNING t.id, t.lease_version AS version
      `,
      { id: item.id, version: item.leaseVersion, result: resultJsonOf(item) },
      { prepare: false },
    );
  } else {
    const ids = bigintArray(sorted.map((i) => i.id));
    written = await executeCached(
      executor,
      `leaseFinalizeFewDone:${table.schema}.${table.table}:${withResults ? 'result' : ''}`,
      (v: { ids: unknown; versions: unknown; results: readonly (string | null)[] }) => sql<{ id: string; version: string }>`
        UPDATE ${t} AS t
        SET ${doneSet(withResults ? sql`f.result` : undefined)}
        FROM unnest(${v.ids}::bigint[], ${v.versions}::bigint[]${withResults ? sql`, ${v.results}::jsonb[]` : sql``}) AS f(id, version${withResults ? sql`, result` : sql``})
        -- the rows by primary key, the ids' array seen by the planner (a custom plan per call)
        WHERE t.id = ANY(${v.ids}::bigint[]) AND ${statusIs('t', 'processing')} AND t.id = f.id AND t.lease_version = f.version
        RETURNING t.id, f.version
      `,
      { ids, versions: bigintArray(sorted.map((i) => i.leaseVersion)), results: withResults ? sorted.map(resultJsonOf) : [] },
      { prepare: false },
    );
  }
  // keyed by id and token: one batch may carry a stale and a current token for the same id
  const won = new Set(written.map((r) => tokenKey({ id: r.id, leaseVersion: r.version })));
  return items.map((item) => (won.has(tokenKey(item)) ? { id: item.id, won: true, status: 'done' } : { id: item.id, won: false, status: null }));
}
