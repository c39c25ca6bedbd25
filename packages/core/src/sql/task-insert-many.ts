import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute, executeCached, type Executor } from './execute.js';
import { leaseLockGroups } from './lease-lock-groups.js';
import { compareIds } from './lease-claim.js';
import { leaseSettleGroups } from './lease-settle-groups.js';
import { tableRef } from './table-ref.js';
import { inTransaction } from './transaction.js';
import type { TaskRef } from '../workflow/task-ref.js';

/** One checked row for {@link taskInsertMany}. */
export interface TaskInsert {
  readonly name: string;
  /** Already JSON text. */
  readonly payloadJson: string;
  readonly priority: number;
  readonly groupKey: string | null;
  readonly dedupKey: string | null;
  readonly maxAttempts: number;
  /** Absolute run-at time, or null for `now() + delayMs`. */
  readonly runAt: Date | null;
  readonly delayMs: number;
  /** The limit the task runs under (`flow`), or null. @defaultValue null */
  readonly flow?: string | null;
  /** Its key under that limit ('' for a limit without per-key bounds). @defaultValue null */
  readonly flowKey?: string | null;
  /** W3C trace context of the producer (see `traceContextNow`), carried to the worker's span. @defaultValue null */
  readonly traceparent?: string | null;
  /** @defaultValue null */
  readonly tracestate?: string | null;
  /** The workflow that spawned it as a child (`ctx.spawn`). @defaultValue null */
  readonly parentId?: string | null;
  /** The version of the definition that enqueued it (`defineTask`'s `version`). @defaultValue 1 */
  readonly version?: number;
}

/**
 * Id of each inserted (or, for a live dedup key, existing) task, in input order; typed with the
 * task's result (`waitForResult`, `getTask`).
 */
export interface InsertedTask<R = unknown> extends TaskRef<R> {
  readonly id: string;
  /** False when a live task with the same name and dedup key was returned instead. */
  readonly inserted: boolean;
}

/**
 * Inserts many tasks. A row whose `(name, dedup_key)` is already live (pending or processing)
 * is not inserted; the live task is returned instead. The unique index decides, so concurrent
 * enqueues of one key are race-free: the later one waits for the earlier one's transaction,
 * then sees its row. Rows are inserted in one canonical order of their dedup keys, so concurrent
 * batches that share keys listed in different orders cannot deadlock. Callers must not repeat a
 * `(name, dedup_key)` inside one call.
 *
 * Rows of an ordering group go in behind the group's head (`blocked`), under the group's lock
 * held until commit ({@link leaseLockGroups}), and the groups' heads are settled afterwards
 * ({@link leaseSettleGroups}) — three statements in one transaction, the caller's when
 * `executor` is one. Without groups it is one statement and needs no transaction.
 */
export async function taskInsertMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  rows: readonly TaskInsert[],
): Promise<InsertedTask[]> {
  if (rows.length === 0) return [];
  const only = rows.length === 1 ? rows[0]! : undefined;
  if (only !== undefined && only.groupKey === null && only.dedupKey === null) return [await insertOne(executor, table, only)];
  const groups = [...new Set(rows.flatMap((r) => (r.groupKey === null ? [] : [r.groupKey])))];
  if (groups.length === 0) {
    return rows.every((r) => r.dedupKey === null) ? insertPlain(executor, table, rows) : insertResolving(executor, table, rows);
  }
  return inTransaction(
    executor,
    async (trx) => {
      await leaseLockGroups(trx, table, groups);
      const inserted = await insertResolving(trx, table, rows);
      await leaseSettleGroups(trx, table, groups, { insertedFrom: lowestId(inserted.filter((r) => r.inserted)) });
      return inserted;
    },
    'ordered tasks lock their group until commit',
  );
}

function lowestId(rows: readonly InsertedTask[]): string | undefined {
  return rows.map((r) => r.id).sort(compareIds)[0];
}

/**
 * Inserts, then settles the rows whose dedup key met a row this statement could not see (a
 * concurrent enqueue that committed while this one waited for it): the next statement sees it,
 * or — if it finished meanwhile — inserts anew. Bounded: each round needs a concurrent
 * enqueue of the same key to commit and finish in between.
 */
async function insertResolving(executor: Executor, table: LeasedTable<unknown>, rows: readonly TaskInsert[]): Promise<InsertedTask[]> {
  const results: (InsertedTask | undefined)[] = new Array(rows.length);
  let todo = rows.map((_, i) => i);
  for (let round = 0; todo.length > 0; round++) {
    if (round === 10) throw new Error(`enqueue: dedup keys kept finishing while being enqueued (${todo.length} rows left)`);
    const answers = await insertStatement(executor, table, todo.map((i) => rows[i]!));
    const next: number[] = [];
    for (let k = 0; k < todo.length; k++) {
      const answer = answers[k];
      if (answer === undefined) next.push(todo[k]!);
      else results[todo[k]!] = answer;
    }
    todo = next;
  }
  return results as InsertedTask[];
}

/**
 * The common single enqueue (no group, no dedup key): nothing to order, nothing to resolve, so a
 * plain INSERT of one row, prepared once per connection (the batch statement is planned for its
 * values every time, which cost a single enqueue several times the insert itself).
 */
async function insertOne(executor: Executor, table: LeasedTable<unknown>, row: TaskInsert): Promise<InsertedTask> {
  // compiled once per table (executeCached): building and compiling the statement through Kysely
  // cost more than the rest of the call's JavaScript
  const [answer] = await executeCached<{ id: string }, InsertOneValues>(executor, `insertOne:${table.schema}.${table.table}`, (v) => insertOneStatement(table, v), {
    name: row.name,
    payload: row.payloadJson,
    priority: row.priority,
    maxAttempts: row.maxAttempts,
    traceparent: row.traceparent ?? null,
    tracestate: row.tracestate ?? null,
    flow: row.flow ?? null,
    flowKey: row.flowKey ?? null,
    parentId: row.parentId ?? null,
    version: row.version ?? 1,
    runAt: row.runAt,
    delayMs: row.delayMs,
  });
  return { id: String(answer!.id), inserted: true };
}

type InsertOneValues = {
  readonly name: string;
  readonly payload: string;
  readonly priority: number;
  readonly maxAttempts: number;
  readonly traceparent: string | null;
  readonly tracestate: string | null;
  readonly flow: string | null;
  readonly flowKey: string | null;
  readonly parentId: string | null;
  readonly version: number;
  readonly runAt: Date | null;
  readonly delayMs: number;
};

// interpolates `v` only (see executeCached)
function insertOneStatement(table: LeasedTable<unknown>, v: InsertOneValues): RawBuilder<{ id: string }> {
  return sql<{ id: string }>`
    INSERT INTO ${tableRef(table)} (name, payload, priority, max_attempts, available_at, scheduled, traceparent, tracestate, flow, flow_key, parent_id, version)
    SELECT ${v.name}::text, ${v.payload}::jsonb, ${v.priority}::int, ${v.maxAttempts}::int, a.at, a.at > now(),
           ${v.traceparent}::text, ${v.tracestate}::text, ${v.flow}::text, ${v.flowKey}::text, ${v.parentId}::bigint, ${v.version}::int
    FROM (SELECT coalesce(${v.runAt}::timestamptz, now() + ${v.delayMs}::float8 * interval '1 millisecond') AS at) AS a
    RETURNING id
  `;
}

/**
 * A batch with no group and no dedup key: no conflict to resolve and no canonical order to take
 * locks in, so the rows go in as they come, ids drawn in input order and read back by position.
 */
async function insertPlain(executor: Executor, table: LeasedTable<unknown>, rows: readonly TaskInsert[]): Promise<InsertedTask[]> {
  if (isUniform(rows)) return insertUniform(executor, table, rows);
  const t = tableRef(table);
  const answers = await execute<{ id: string }>(
    executor,
    sql`
      WITH input AS (
        SELECT nextval((SELECT ${`${table.schema}.${table.table}_id_seq`}::regclass)) AS id, u.*
        FROM unnest(${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.payloadJson)}::jsonb[],
                    ${rows.map((r) => r.priority)}::int[], ${rows.map((r) => r.maxAttempts)}::int[],
                    ${rows.map((r) => r.runAt)}::timestamptz[], ${rows.map((r) => r.delayMs)}::float8[],
                    ${rows.map((r) => r.traceparent ?? null)}::text[], ${rows.map((r) => r.tracestate ?? null)}::text[],
                    ${rows.map((r) => r.flow ?? null)}::text[], ${rows.map((r) => r.flowKey ?? null)}::text[],
                    ${rows.map((r) => r.parentId ?? null)}::bigint[], ${rows.map((r) => r.version ?? 1)}::int[])
             WITH ORDINALITY AS u(name, payload, priority, max_attempts, run_at, delay_ms, traceparent, tracestate, flow, flow_key, parent_id, version, n)
      ), inserted AS (
        INSERT INTO ${t} (id, name, payload, priority, max_attempts, available_at, scheduled, traceparent, tracestate, flow, flow_key, parent_id, version)
          OVERRIDING SYSTEM VALUE
        SELECT i.id, i.name, i.payload, i.priority, i.max_attempts, a.at, a.at > now(), i.traceparent, i.tracestate, i.flow, i.flow_key, i.parent_id, i.version
        FROM input AS i CROSS JOIN LATERAL (SELECT coalesce(i.run_at, now() + i.delay_ms * interval '1 millisecond') AS at) AS a
      )
      SELECT id FROM input ORDER BY n
    `,
  );
  if (answers.length !== rows.length) throw new Error(`enqueue: ${answers.length} ids for ${rows.length} rows`);
  return answers.map((a) => ({ id: String(a.id), inserted: true }));
}

/**
 * Rows of one name, priority and attempt limit, each due now and carrying nothing but its payload:
 * what `enqueueMany` of one task with plain items sends.
 */
function isUniform(rows: readonly TaskInsert[]): boolean {
  const first = rows[0]!;
  return rows.every(
    (r) =>
      r.name === first.name &&
      r.priority === first.priority &&
      r.maxAttempts === first.maxAttempts &&
      (r.version ?? 1) === (first.version ?? 1) &&
      r.runAt === null &&
      r.delayMs === 0 &&
      (r.traceparent ?? null) === null &&
      (r.tracestate ?? null) === null &&
      (r.flow ?? null) === null &&
      (r.flowKey ?? null) === null &&
      (r.parentId ?? null) === null,
  );
}

/**
 * {@link insertPlain} for uniform rows: one array (the payloads) instead of eleven, the rest as
 * scalars and column defaults (`available_at` now, not `scheduled`). pg escapes every element of
 * every array it sends, and the server unnests each one, so the ten arrays of constants and NULLs
 * were most of a batch's cost.
 *
 * The ids come back as a span where they can: they are drawn in input order (`ORDER BY u.n`) and
 * are distinct, so when the largest minus the smallest is one less than their count they are
 * exactly first, first + 1, … in input order. Only when a concurrent insert drew ids between
 * them does the statement send them all, sorted, which is input order too. Sending an id per row
 * (as rows, or as one array after sorting by position in a CTE) cost 7–10 % of a 1,000-row batch
 * (bench/RESULTS.md).
 */
async function insertUniform(executor: Executor, table: LeasedTable<unknown>, rows: readonly TaskInsert[]): Promise<InsertedTask[]> {
  const first = rows[0]!;
  // compiled once per table (executeCached), like the single insert: it also carries the shared
  // single enqueues of a pool (task/shared-insert.ts), a statement per handful of calls
  const [answer] = await executeCached<UniformInsertAnswer, UniformInsertValues>(executor, `insertUniform:${table.schema}.${table.table}`, (v) => uniformInsertStatement(table, v), {
    payloads: rows.map((r) => r.payloadJson),
    name: first.name,
    priority: first.priority,
    maxAttempts: first.maxAttempts,
    version: first.version ?? 1,
  });
  const ids = answer === undefined ? [] : answer.ids ?? span(answer.first, answer.n);
  if (ids.length !== rows.length) throw new Error(`enqueue: ${ids.length} ids for ${rows.length} rows`);
  return ids.map((id) => ({ id, inserted: true }));
}

function span(first: string, n: number): string[] {
  const lo = BigInt(first);
  return Array.from({ length: n }, (_, i) => String(lo + BigInt(i)));
}

type UniformInsertValues = {
  readonly payloads: readonly string[];
  readonly name: string;
  readonly priority: number;
  readonly maxAttempts: number;
  readonly version: number;
};

/** The smallest id and the count; `ids` in input order only when they are not `first`, `first + 1`, …. */
type UniformInsertAnswer = { readonly first: string; readonly n: number; readonly ids: string[] | null };

// interpolates `v` only (see executeCached); text, not bigint: an application may have pg parse
// bigint columns as numbers (pg.types.setTypeParser)
function uniformInsertStatement(table: LeasedTable<unknown>, v: UniformInsertValues): RawBuilder<UniformInsertAnswer> {
  return sql<UniformInsertAnswer>`
    WITH inserted AS (
      INSERT INTO ${tableRef(table)} (name, payload, priority, max_attempts, version)
      SELECT ${v.name}::text, u.payload, ${v.priority}::int, ${v.maxAttempts}::int, ${v.version}::int
      FROM unnest(${v.payloads}::jsonb[]) WITH ORDINALITY AS u(payload, n)
      ORDER BY u.n
      RETURNING id
    ), span AS (
      SELECT min(id) AS lo, max(id) AS hi, count(*) AS n FROM inserted
    )
    SELECT lo::text AS first, n::int AS n,
           CASE WHEN hi - lo + 1 = n THEN NULL ELSE (SELECT array_agg(id ORDER BY id)::text[] FROM inserted) END AS ids
    FROM span
  `;
}

/** One INSERT; per input row its task, or undefined where a dedup conflict's row is not visible yet. */
async function insertStatement(
  executor: Executor,
  table: LeasedTable<unknown>,
  rows: readonly TaskInsert[],
): Promise<(InsertedTask | undefined)[]> {
  const t = tableRef(table);
  const answers = await execute<{ n: string; id: string | null; inserted: boolean }>(
    executor,
    sql`
      WITH input AS (
        -- ids drawn here, in input order (so in enqueue order inside a group), before the rows
        -- are sorted for insertion below
        SELECT nextval((SELECT ${`${table.schema}.${table.table}_id_seq`}::regclass)) AS id, u.*
        FROM unnest(${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.payloadJson)}::jsonb[],
                    ${rows.map((r) => r.priority)}::int[], ${rows.map((r) => r.groupKey)}::text[],
                    ${rows.map((r) => r.dedupKey)}::text[], ${rows.map((r) => r.maxAttempts)}::int[],
                    ${rows.map((r) => r.runAt)}::timestamptz[], ${rows.map((r) => r.delayMs)}::float8[],
                    ${rows.map((r) => r.traceparent ?? null)}::text[], ${rows.map((r) => r.tracestate ?? null)}::text[],
                    ${rows.map((r) => r.flow ?? null)}::text[], ${rows.map((r) => r.flowKey ?? null)}::text[],
                    ${rows.map((r) => r.parentId ?? null)}::bigint[], ${rows.map((r) => r.version ?? 1)}::int[])
             WITH ORDINALITY AS u(name, payload, priority, group_key, dedup_key, max_attempts, run_at, delay_ms, traceparent, tracestate, flow, flow_key, parent_id, version, n)
      ), inserted AS (
        INSERT INTO ${t} AS t
          (id, name, payload, priority, group_key, dedup_key, max_attempts, available_at, blocked, scheduled, traceparent, tracestate, flow, flow_key, parent_id, version)
          OVERRIDING SYSTEM VALUE
        SELECT i.id, i.name, i.payload, i.priority, i.group_key, i.dedup_key, i.max_attempts, a.at,
               -- an ordered row waits behind its group's head until settled
               i.group_key IS NOT NULL,
               a.at > now(),
               i.traceparent, i.tracestate, i.flow, i.flow_key, i.parent_id, i.version
        FROM input AS i CROSS JOIN LATERAL (SELECT coalesce(i.run_at, now() + i.delay_ms * interval '1 millisecond') AS at) AS a
        -- one canonical order of dedup keys for every producer: two batches that share keys
        -- take them in the same order, so neither waits for the other while holding one it needs
        ORDER BY i.dedup_key IS NULL, i.name COLLATE "C", i.dedup_key COLLATE "C", i.id
        ON CONFLICT (name, dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('pending', 'processing')
        -- no update of the live row: that would lock it (and its worker's fenced write) until
        -- this transaction ends
        DO NOTHING
        RETURNING t.id
      )
      SELECT i.n,
             coalesce(ins.id,
                      -- the live task that won the key, as far as this statement's snapshot shows
                      -- it: looked up in the dedup index for each row not inserted (a scalar
                      -- subquery is never turned into a join); joined, the planner read every
                      -- row of the table for a batch of a few hundred keys
                      (SELECT live.id FROM ${t} AS live
                       WHERE live.name = i.name AND live.dedup_key = i.dedup_key AND live.status IN ('pending', 'processing')
                       LIMIT 1)) AS id,
             ins.id IS NOT NULL AS inserted
      FROM input AS i
      LEFT JOIN inserted AS ins ON ins.id = i.id
    `,
    // planned per call: the arrays hold 1 to 100,000 rows
    { prepare: false },
  );
  const byPosition: (InsertedTask | undefined)[] = new Array(rows.length);
  for (const a of answers) {
    if (a.id !== null) byPosition[Number(a.n) - 1] = { id: String(a.id), inserted: a.inserted };
  }
  return byPosition;
}
