import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { bigintArray } from './bigint-array.js';
import { executeCached, type Executor } from './execute.js';
import { fenceEach, statusIs } from './fence.js';
import { compareIds } from './lease-claim.js';
import { doneSet, resultJsonOf } from './lease-finalize-few.js';
import type { FinalizeItem, FinalizeResult } from './lease-finalize-many.js';
import { tokenKey } from './lease-row.js';
import { tableRef } from './table-ref.js';
import { stepInputCte, stepInsert, stepRecordValues, type StepRecord } from './task-steps.js';

/** What {@link stepsAndDoneWrite} wrote. */
export interface StepsAndDone {
  /** The step records written, as `task_id/name` keys (see `taskStepRecordMany`). */
  readonly steps: Set<string>;
  /** Per completion, in the order given (see `leaseFinalizeMany`). */
  readonly done: FinalizeResult[];
}

/**
 * A batch of workflow step records and a few completions of other runs, in one statement: what
 * `taskStepRecordMany` and the few-row fenced `done` write do, with one commit instead of two.
 * When a worker's runs are out of step with each other, some end while others record a step, and
 * the two writes went out side by side: two commits, two WAL flushes, each cycle of the runs
 * (bench/RESULTS.md, issue 35). `done` holds completions going `done`, under no limit, in no
 * ordering group and with no parent (their write locks nothing else; see `Finalizer`).
 *
 * Every task row either part writes is locked first, in one pass in id order (`f`), so the
 * statement takes its row locks in the order a heartbeat and every other fenced write take them;
 * each part then writes only under its own token.
 * @internal
 */
export async function stepsAndDoneWrite(
  executor: Executor,
  table: LeasedTable<unknown>,
  steps: readonly StepRecord[],
  done: readonly FinalizeItem[],
): Promise<StepsAndDone> {
  const sorted = [...done].sort((a, b) => compareIds(a.id, b.id));
  const withResults = sorted.some((i) => resultJsonOf(i) !== null);
  const values = {
    ...stepRecordValues(steps),
    doneIds: bigintArray(sorted.map((i) => i.id)),
    doneVersions: bigintArray(sorted.map((i) => i.leaseVersion)),
    doneResults: withResults ? sorted.map(resultJsonOf) : [],
  };
  const t = tableRef(table);
  const rows = await executeCached(
    executor,
    `stepsAndDone:${table.schema}.${table.table}:${withResults ? 'result' : ''}`,
    (v: typeof values) => sql<{ id: string; name: string | null; version: string | null }>`
      WITH ${stepInputCte(v)}, d AS (
        SELECT * FROM unnest(${v.doneIds}::bigint[], ${v.doneVersions}::bigint[]${withResults ? sql`, ${v.doneResults}::jsonb[]` : sql``})
                      AS d(id, version${withResults ? sql`, result` : sql``})
      ), f AS (
        -- every row written below, locked here in id order (by primary key: see byPrimaryKey);
        -- the tokens are compared where each part writes
        SELECT l.id, l.lease_version FROM ${t} AS l
        WHERE l.id = ANY(ARRAY(SELECT task_id FROM input UNION ALL SELECT id FROM d)) AND ${statusIs('l', 'processing')}
        ORDER BY l.id FOR NO KEY UPDATE
      ), recorded AS (
        ${stepInsert(table)}
      ), written AS (
        -- joined to f: a row is written only once f has locked it
        UPDATE ${t} AS t
        SET ${doneSet(withResults ? sql`d.result` : undefined)}
        FROM d JOIN f ON f.id = d.id AND f.lease_version = d.version
        WHERE ${fenceEach('t', 'd')}
        RETURNING t.id, d.version
      )
      SELECT task_id AS id, name, NULL::bigint AS version FROM recorded
      UNION ALL
      SELECT id, NULL, version FROM written
    `,
    values,
    // prepared, as the step records alone are: its rows are a handful of each kind, each reached
    // by primary key, so a generic plan fits it (planned per call, it cost more than both writes)
  );
  const recorded = new Set<string>();
  const won = new Set<string>();
  for (const r of rows) {
    if (r.name === null) won.add(tokenKey({ id: r.id, leaseVersion: r.version! }));
    else recorded.add(`${r.id}/${r.name}`);
  }
  // keyed by id and token: one batch may carry a stale and a current token for the same id
  return {
    steps: recorded,
    done: done.map((item) => (won.has(tokenKey(item)) ? { id: item.id, won: true, status: 'done' } : { id: item.id, won: false, status: null })),
  };
}
