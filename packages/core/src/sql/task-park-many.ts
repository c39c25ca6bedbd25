import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { compiler, type PgQueryable } from './execute.js';
import { byPrimaryKey } from './fence.js';
import { tableRef } from './table-ref.js';
import { signalTableRef, stepTableRef } from './task-steps.js';

/** One wait of a workflow run for {@link taskParkMany}: what it waits for, under its task's token. */
export type ParkRequest =
  | {
      readonly kind: 'sleep';
      readonly taskId: string;
      readonly leaseVersion: number;
      /** The sleep's step name. */
      readonly name: string;
      readonly position: number;
      /** Its wake time: `at`, else `delayMs` from the call, fixed at its first run. */
      readonly at: Date | null;
      readonly delayMs: number | null;
      /** When the run called (`performance.now()`): see {@link taskParkMany}. */
      readonly calledAt: number;
    }
  | {
      readonly kind: 'signal';
      readonly taskId: string;
      readonly leaseVersion: number;
      /** The wait's step name. */
      readonly name: string;
      readonly position: number;
      /** The signal's name. */
      readonly signal: string;
      /** The timeout from the wait's first call; null for none. */
      readonly delayMs: number | null;
      /** When the run called (`performance.now()`): see {@link taskParkMany}. */
      readonly calledAt: number;
    }
  | { readonly kind: 'children'; readonly taskId: string; readonly leaseVersion: number };

/** What {@link taskParkMany} did with one request. */
export type ParkResult =
  /** The fence refused (lease moved on, task cancelled): nothing written for it. */
  | { readonly kind: 'lost' }
  /**
   * The wait is over, its step recorded done: a sleep that is due, a signal taken (`payload`,
   * undefined for none) or a timeout that came (`timedOut`), no open children.
   */
  | { readonly kind: 'continue'; readonly timedOut: boolean; readonly payload: unknown; readonly taken: boolean }
  /** Parked: `waiting`, lease and slot given back; `dueInMs` by the database's clock when it has a wake time. */
  | { readonly kind: 'parked'; readonly dueInMs: number | null };

/**
 * Records and parks the waits of many workflow runs (at most one per task) in one round trip:
 * each task's row is locked at its fencing token, then, per wait, its step is opened (its wake
 * time fixed at its first run) and the wait either ends now — a sleep that is due, a signal taken,
 * a timeout that came, no child left open; the step recorded done — or the task parks (`waiting`
 * for `sleep`, `signal:<name>` or `children`, until its wake time when it has one, `scheduled`;
 * lease cleared, the claim's attempt given back).
 *
 * Two statements in one simple-protocol message, which PostgreSQL runs as one transaction, each
 * with its own snapshot (READ COMMITTED): the first locks the rows, the second checks and writes.
 * The check must see what committed before the lock was granted: a `sendSignal`, or a child's
 * end, locks the task's row before it looks whether the task waits; whatever committed before
 * the park's lock, the park's check sees; whatever comes after the lock sees the task parked
 * (and wakes it). In one statement the check would read the snapshot taken before the lock
 * waited, and park past a signal or a last child's end that committed meanwhile. A simple query
 * takes no parameters, so the input goes in as one JSON literal (see {@link literal}). Rolled
 * back whole on any error. The caller sends one request per task.
 */
export async function taskParkMany(pool: PgQueryable, table: LeasedTable<unknown>, requests: readonly ParkRequest[]): Promise<ParkResult[]> {
  const ids = requests.map((r) => {
    if (!/^[0-9]{1,19}$/.test(r.taskId)) throw new TypeError(`not a task id: ${r.taskId}`);
    return r.taskId;
  });
  // A delay counts from the call: the time a request waited here for its batch is taken off, so
  // the database's now() plus the rest is no earlier than the call plus the delay (the statement
  // reaches the server after it is sent), and no later by the wait (a batch in flight, say).
  const sendAt = performance.now();
  const input = requests.map((r, n) => ({
    n,
    task_id: r.taskId,
    version: r.leaseVersion,
    kind: r.kind,
    name: r.kind === 'children' ? null : r.name,
    position: r.kind === 'children' ? null : r.position,
    at: r.kind === 'sleep' && r.at !== null ? r.at.toISOString() : null,
    delay_ms: r.kind === 'children' || r.delayMs === null ? null : Math.max(0, r.delayMs - (sendAt - r.calledAt)),
    signal: r.kind === 'signal' ? r.signal : null,
    wait_for: r.kind === 'signal' ? `signal:${r.signal}` : r.kind,
  }));
  const t = tableRef(table);
  const s = stepTableRef(table);
  const g = signalTableRef(table);
  const lock = sql`
    WITH ids AS (SELECT unnest(${sql.raw(`'{${ids.join(',')}}'`)}::bigint[]) AS id)
    SELECT l.id FROM ${t} AS l WHERE ${byPrimaryKey('l', 'ids', 'processing')} ORDER BY l.id FOR NO KEY UPDATE
  `;
  const work = sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${sql.raw(literal(JSON.stringify(input)))}::jsonb)
        AS i(n int, task_id bigint, version bigint, kind text, name text, position int, at timestamptz,
             delay_ms float8, signal text, wait_for text)
    ), f AS (
      -- the fence: locked by the statement before, in this transaction; the token compared here
      SELECT l.id, l.lease_version FROM ${t} AS l
      WHERE ${byPrimaryKey('l', 'input', 'processing', 'task_id')}
      ORDER BY l.id FOR NO KEY UPDATE
    ), w AS (
      -- each wait under its task's token, with its wake time: as its first run fixed it (the
      -- step open), else from this one
      SELECT i.*, p.task_id IS NOT NULL AS opened,
             CASE WHEN p.task_id IS NOT NULL THEN p.wake_at
                  ELSE coalesce(i.at, now() + i.delay_ms * interval '1 millisecond') END AS wake_at
      FROM input AS i
      JOIN f ON f.id = i.task_id AND f.lease_version = i.version
      LEFT JOIN ${s} AS p ON p.task_id = i.task_id AND p.name = i.name
    ), pick AS (
      -- the oldest signal of its name not yet taken, locked (a concurrent take skips to the next)
      SELECT w.task_id, o.id
      FROM w CROSS JOIN LATERAL (
        SELECT o.id FROM ${g} AS o
        WHERE o.task_id = w.task_id AND o.name = w.signal AND o.consumed_at IS NULL
        ORDER BY o.id LIMIT 1 FOR UPDATE
      ) AS o
      WHERE w.kind = 'signal'
    ), taken AS (
      UPDATE ${g} AS o SET consumed_at = now() FROM pick WHERE o.id = pick.id
      RETURNING o.task_id, o.payload, o.payload IS NULL AS nothing
    ), d AS (
      SELECT w.*, k.task_id IS NOT NULL AS taken, k.payload, coalesce(k.nothing, true) AS nothing,
             CASE w.kind
               WHEN 'children' THEN NOT EXISTS (SELECT 1 FROM ${t} AS c
                                                WHERE c.parent_id = w.task_id AND c.status IN ('pending', 'processing', 'waiting'))
               ELSE k.task_id IS NOT NULL OR coalesce(w.wake_at <= now(), false)
             END AS goes_on
      FROM w LEFT JOIN taken AS k ON k.task_id = w.task_id
    ), recorded AS (
      -- opened at its first run (done = false, its wake time), or recorded done now
      INSERT INTO ${s} AS s (task_id, name, done, result, wake_at, lease_version, done_at, position, kind)
      SELECT d.task_id, d.name, d.goes_on,
             CASE WHEN d.goes_on AND d.kind = 'signal' THEN
               CASE WHEN NOT d.taken THEN '{"timedOut":true}'::jsonb
                    WHEN d.nothing THEN '{"timedOut":false}'::jsonb
                    ELSE jsonb_build_object('timedOut', false, 'payload', d.payload) END
             END,
             d.wake_at, d.version, CASE WHEN d.goes_on THEN now() END, d.position, d.kind
      FROM d
      WHERE d.kind <> 'children' AND (d.goes_on OR NOT d.opened)
      ON CONFLICT (task_id, name) DO UPDATE
        SET done = true, result = excluded.result, lease_version = excluded.lease_version, done_at = now(),
            position = coalesce(s.position, excluded.position), kind = coalesce(s.kind, excluded.kind)
        WHERE NOT s.done AND excluded.done
    ), parked AS (
      UPDATE ${t} AS t
      SET status = 'waiting', wait_for = d.wait_for, available_at = coalesce(d.wake_at, now()),
          scheduled = d.wake_at IS NOT NULL, attempts = t.attempts - 1, lease_owner = NULL, lease_until = NULL
      FROM d
      WHERE ${byPrimaryKey('t', 'd', 'processing', 'task_id')} AND t.id = d.task_id AND t.lease_version = d.version AND NOT d.goes_on
      -- by the database's clock, for the worker's timer
      RETURNING t.id, CASE WHEN d.wake_at IS NOT NULL THEN date_part('epoch', t.available_at - now()) * 1000 END AS due_in_ms
    )
    SELECT d.n, d.goes_on, d.taken, d.payload, d.nothing, p.id IS NOT NULL AS parked, p.due_in_ms
    FROM d LEFT JOIN parked AS p ON p.id = d.task_id
  `;
  const sentAt = performance.now();
  const rows = await runInOneTransaction<Row>(pool, [lock, work]);
  // due_in_ms counts from the transaction's now(), about when it went out: the round trip since
  // has already passed (a timer set for the whole of it would fire that much late)
  const elapsed = performance.now() - sentAt;
  const results: ParkResult[] = requests.map(() => ({ kind: 'lost' }));
  for (const r of rows) {
    const n = Number(r.n);
    if (r.goes_on) results[n] = { kind: 'continue', timedOut: !r.taken, taken: r.taken, payload: r.taken && !r.nothing ? r.payload : undefined };
    else if (r.parked) results[n] = { kind: 'parked', dueInMs: r.due_in_ms === null ? null : Math.max(0, Number(r.due_in_ms) - elapsed) };
  }
  return results;
}

interface Row {
  n: number;
  goes_on: boolean;
  taken: boolean;
  payload: unknown;
  nothing: boolean;
  parked: boolean;
  due_in_ms: number | string | null;
}

/**
 * Sends `statements` as one simple-protocol query: PostgreSQL runs them as one transaction
 * (committed when the last ends, rolled back whole when one fails), each with a snapshot of its
 * own. Returns the last statement's rows. None may take parameters.
 */
async function runInOneTransaction<R>(pool: PgQueryable, statements: readonly RawBuilder<unknown>[]): Promise<R[]> {
  const text = statements
    .map((statement) => {
      const compiled = statement.compile(compiler);
      if (compiled.parameters.length > 0) throw new Error('a statement of a simple query cannot take parameters');
      return compiled.sql.trim();
    })
    .join(';\n');
  const result = (await pool.query(text)) as unknown as { rows: unknown[] } | { rows: unknown[] }[];
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return (last?.rows ?? []) as R[];
}

/**
 * `text` as an SQL string literal that reads the same whatever `standard_conforming_strings`
 * says: `E'…'` with backslashes and quotes doubled. The text is JSON (no control characters
 * raw), sent as UTF-8.
 */
function literal(text: string): string {
  return `E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}
