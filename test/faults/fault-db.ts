// The process-level scenarios' bookkeeping in the test database: the sink table the worker
// processes record effects in, an audit trail of every status or lease_version change of a task
// (written by a trigger, so it sees what really committed), and the checks run on both at the end.
import { sql, type Kysely } from 'kysely';
import { expect } from 'vitest';
import type { WorkerEvent } from './fleet.js';

/** Creates fault_effect, fault_audit and the audit trigger (idempotent). */
export async function installFaultTables(db: Kysely<object>): Promise<void> {
  await sql`
    CREATE TABLE IF NOT EXISTS fault_effect (
      task_id bigint NOT NULL, lease_version bigint NOT NULL, pid int NOT NULL,
      at timestamptz NOT NULL DEFAULT clock_timestamp())`.execute(db);
  await sql`
    CREATE TABLE IF NOT EXISTS fault_audit (
      id bigint NOT NULL, old_status text NOT NULL, new_status text NOT NULL,
      old_version bigint NOT NULL, new_version bigint NOT NULL, old_lease_until timestamptz,
      tx_now timestamptz NOT NULL)`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION fault_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO fault_audit VALUES (NEW.id, OLD.status, NEW.status, OLD.lease_version, NEW.lease_version,
                                      OLD.lease_until, now());
      RETURN NULL;
    END $$`.execute(db);
  await sql`DROP TRIGGER IF EXISTS fault_audit ON leasehold.task`.execute(db);
  // heartbeats change only lease_until: not audited, there are too many and they decide nothing
  await sql`
    CREATE TRIGGER fault_audit AFTER UPDATE ON leasehold.task FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_version IS DISTINCT FROM NEW.lease_version)
    EXECUTE FUNCTION fault_audit_row()`.execute(db);
}

/**
 * Empties the task, effect and audit tables, then adds `count` fault tasks: `special` ones first,
 * then `ordered.rows` in `ordered.groups` ordering groups (round-robin, through the SQL enqueue,
 * which settles each group's head), then plain ones.
 */
export async function seedFaultTasks(
  db: Kysely<object>,
  count: number,
  special: { payload: object; priority: number; count: number }[] = [],
  ordered: { rows: number; groups: number } = { rows: 0, groups: 0 },
): Promise<void> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, fault_effect, fault_audit`.execute(db);
  if (ordered.rows > 0) {
    await sql`SELECT leasehold.enqueue('fault', '{}'::jsonb, group_key => 'fault-' || (i % ${ordered.groups}), max_attempts => 50)
              FROM generate_series(1, ${ordered.rows}) AS i ORDER BY i`.execute(db);
  }
  count -= ordered.rows;
  for (const s of special) {
    await sql`INSERT INTO leasehold.task (name, payload, priority, max_attempts)
              SELECT 'fault', ${JSON.stringify(s.payload)}::jsonb, ${s.priority}, 50 FROM generate_series(1, ${s.count})`.execute(db);
  }
  await sql`INSERT INTO leasehold.task (name, max_attempts)
            SELECT 'fault', 50 FROM generate_series(1, ${count - special.reduce((n, s) => n + s.count, 0)})`.execute(db);
}

/**
 * Each ordering group ran one row at a time, in id order, whatever was killed: every effect of a
 * row (any claim's) comes after every effect of the row before it in its group. Returns how many
 * grouped rows were checked.
 */
export async function checkGroupOrder(db: Kysely<object>): Promise<number> {
  const checked = (await sql<{ n: number }>`
    SELECT count(DISTINCT e.task_id)::int AS n FROM fault_effect AS e JOIN leasehold.task AS t ON t.id = e.task_id
    WHERE t.group_key IS NOT NULL`.execute(db)).rows[0]!.n;
  const overlaps = (await sql<{ g: string; id: string; prev: string }>`
    WITH r AS (
      SELECT t.group_key AS g, t.id, min(e.at) AS first_at, max(e.at) AS last_at
      FROM leasehold.task AS t JOIN fault_effect AS e ON e.task_id = t.id
      WHERE t.group_key IS NOT NULL GROUP BY t.group_key, t.id
    ), w AS (SELECT r.*, lag(r.last_at) OVER (PARTITION BY r.g ORDER BY r.id) AS prev_last, lag(r.id) OVER (PARTITION BY r.g ORDER BY r.id) AS prev_id FROM r)
    SELECT g, id::text, prev_id::text AS prev FROM w WHERE prev_last IS NOT NULL AND first_at <= prev_last`.execute(db)).rows;
  expect(overlaps, 'a grouped row that started before the row ahead of it in its group had ended').toEqual([]);
  return checked;
}

/** Tasks not yet done. */
export async function unfinished(db: Kysely<object>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE status <> 'done'`.execute(db);
  return rows[0]!.n;
}

/** What a scenario's end state shows. */
export interface FaultTally {
  tasks: number;
  lost: number;
  duplicates: number;
  /** Finalizes by a stale token that the fence refused (reported by the workers). */
  staleRefused: number;
  /** Stale owners stopped by their heartbeat before they tried to finalize. */
  staleAborted: number;
  /** Takeovers of a lease that had expired. */
  takeovers: number;
  /** Longest wait between a lease's expiry and its takeover, in ms (database time). */
  maxTakeoverLagMs: number;
}

/**
 * Checks the end state against the guarantees, given what the workers reported:
 * every task done exactly once; every effect recorded, at most once per claim, the final
 * claim's included; every duplicate effect from a claim whose lease moved on; no claim of a live
 * lease; every reported success is the committed one; every reported refusal really was stale,
 * never a false alarm for a token whose own write committed.
 */
export async function checkFaultOutcome(db: Kysely<object>, events: readonly WorkerEvent[]): Promise<FaultTally> {
  const tasks = (await sql<{ id: string; status: string; v: number }>`
    SELECT id::text, status, lease_version::int AS v FROM leasehold.task ORDER BY id`.execute(db)).rows;
  const finalVersion = new Map(tasks.map((t) => [t.id, t.v]));
  const lost = tasks.filter((t) => t.status !== 'done').length;
  expect(lost, 'tasks not done').toBe(0);

  const effects = (await sql<{ id: string; v: number; n: number }>`
    SELECT task_id::text AS id, lease_version::int AS v, count(*)::int AS n FROM fault_effect GROUP BY 1, 2`.execute(db)).rows;
  expect(effects.filter((e) => e.n > 1), 'one claim ran its handler twice').toEqual([]);
  const withEffect = new Set(effects.map((e) => e.id));
  expect(tasks.filter((t) => !withEffect.has(t.id)).map((t) => t.id), 'tasks without an effect').toEqual([]);
  const finalEffects = new Set(effects.filter((e) => e.v === finalVersion.get(e.id)).map((e) => e.id));
  expect(tasks.filter((t) => !finalEffects.has(t.id)).map((t) => t.id), 'done without the final claim running').toEqual([]);
  const staleEffects = effects.filter((e) => e.v !== finalVersion.get(e.id));
  expect(staleEffects.filter((e) => e.v > finalVersion.get(e.id)!), 'effect from a future token').toEqual([]);

  const audit = (await sql<{ id: string; old_status: string; new_status: string; old_version: number; new_version: number; lag_ms: number | null }>`
    SELECT id::text, old_status, new_status, old_version::int AS old_version, new_version::int AS new_version,
           extract(epoch FROM tx_now - old_lease_until) * 1000 AS lag_ms
    FROM fault_audit`.execute(db)).rows;
  const dones = audit.filter((a) => a.new_status === 'done');
  expect(dones.length, 'done transitions').toBe(tasks.length);
  for (const d of dones) expect(d.old_version, `task ${d.id} done by its final token`).toBe(finalVersion.get(d.id));
  const finalized = new Set(audit.filter((a) => a.old_status === 'processing' && a.new_status !== 'processing').map((a) => `${a.id}:${a.old_version}`));
  const claims = audit.filter((a) => a.new_status === 'processing');
  for (const c of claims) expect(c.new_version, `claim of ${c.id} bumps the token by one`).toBe(c.old_version + 1);
  const takeovers = claims.filter((c) => c.old_status === 'processing');
  // a claim never takes a live lease: it took over only after lease_until had passed
  expect(takeovers.filter((c) => !(Number(c.lag_ms) > 0)), 'takeover of a live lease').toEqual([]);
  // every duplicate effect came from a claim that ended (finalized or taken over) before the final one
  for (const e of staleEffects) {
    const movedOn = finalized.has(`${e.id}:${e.v}`) || claims.some((c) => c.id === e.id && c.old_version === e.v);
    expect(movedOn, `duplicate effect of task ${e.id} at lease_version ${e.v}`).toBe(true);
  }

  for (const ok of events.filter((x) => x.e === 'ok')) {
    expect(dones.some((d) => d.id === ok.id && d.old_version === ok.v), `reported success ${ok.id}@${ok.v} is the committed done`).toBe(true);
  }
  const refusals = events.filter((x) => x.e === 'lost');
  // no false alarm: a token whose own fenced write committed is never reported lost (a heartbeat
  // tick racing the write, or a finalize retried after its reply was lost, must see that)
  const misreported = refusals.filter((r) => finalized.has(`${r.id}:${r.v}`));
  expect(misreported, 'lease-lost reported for a token whose own write committed').toEqual([]);
  for (const r of refusals) {
    // the refused token really was stale: the task went on under a later token
    expect(finalVersion.get(r.id!)!, `refused ${r.id}@${r.v} (${r.via}) was stale`).toBeGreaterThan(r.v!);
  }
  return {
    tasks: tasks.length,
    lost,
    duplicates: staleEffects.length,
    staleRefused: refusals.filter((r) => r.via === 'finalize').length,
    staleAborted: refusals.filter((r) => r.via === 'heartbeat').length,
    takeovers: takeovers.length,
    maxTakeoverLagMs: Math.round(Math.max(0, ...takeovers.map((c) => Number(c.lag_ms)))),
  };
}
