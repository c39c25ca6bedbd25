// Rows as the versioned workflow runtime (core migration 11) writes them, inserted directly so
// that what shows them (core's reads, the CLI, the dashboard) is tested apart from the runtime.
import { sql, type Kysely } from 'kysely';

/** A run of a task at a version, in an unfinished or finished status. */
export interface SeededRun {
  readonly name: string;
  readonly version?: number;
  readonly status?: 'pending' | 'processing' | 'waiting' | 'done' | 'dead';
  /** For a waiting run: wakes at a time (a sleep) rather than by an event (a signal). */
  readonly scheduled?: boolean;
  /** How long ago it was created, in ms. @defaultValue 0 */
  readonly createdAgoMs?: number;
  readonly lastError?: string;
}

/** Inserts one run; returns its id. */
export async function seedRun(db: Kysely<object>, run: SeededRun): Promise<string> {
  const status = run.status ?? 'pending';
  const scheduled = status === 'waiting' && run.scheduled === true;
  const ago = sql`now() - ${run.createdAgoMs ?? 0} * interval '1 millisecond'`;
  const { rows } = await sql<{ id: string }>`
    INSERT INTO leasehold.task (name, payload, version, status, scheduled, wait_for, attempts, lease_version,
                                lease_owner, lease_until, created_at, available_at, done_at, last_error)
    VALUES (${run.name}, '{}', ${run.version ?? 1}, ${status}, ${scheduled},
            ${status === 'waiting' ? (scheduled ? 'sleep' : 'signal:approved') : null},
            ${status === 'processing' || status === 'dead' ? 1 : 0}, ${status === 'pending' ? 0 : 1},
            ${status === 'processing' ? 'seeded-worker' : null},
            ${status === 'processing' ? sql`now() + interval '1 minute'` : null},
            ${ago}, ${scheduled ? sql`now() + interval '1 hour'` : ago},
            ${status === 'done' || status === 'dead' ? sql`now()` : null}, ${run.lastError ?? null})
    RETURNING id`.execute(db);
  return String(rows[0]!.id);
}

/** A `task_worker` row: what a worker reports it accepts, last seen that long ago. */
export async function seedWorker(db: Kysely<object>, owner: string, accepts: Record<string, number[]>, seenAgoMs = 0): Promise<void> {
  await sql`
    INSERT INTO leasehold.task_worker (owner, accepts, started_at, seen_at)
    VALUES (${owner}, ${JSON.stringify(accepts)}::jsonb, now() - interval '1 hour', now() - ${seenAgoMs} * interval '1 millisecond')`.execute(db);
}

/** A patch marker (`ctx.patched(patch)` answered `taken`) recorded that long ago. */
export async function seedMarker(db: Kysely<object>, taskId: string, patch: string, taken: boolean, recordedAgoMs = 0): Promise<void> {
  await sql`
    INSERT INTO leasehold.task_step (task_id, name, done, result, lease_version, kind, position, created_at, done_at)
    VALUES (${taskId}, ${`patch:${patch}`}, true, ${JSON.stringify(taken)}::jsonb, 1, 'patch', NULL,
            now() - ${recordedAgoMs} * interval '1 millisecond', now() - ${recordedAgoMs} * interval '1 millisecond')`.execute(db);
}

/** `last_error` of a run whose code no longer matched its record, as the runtime words it. */
export function nonDeterminismError(taskId: string, position: number): string {
  return `NonDeterminismError: run ${taskId} at position ${position} recorded step "charge" but the code asked for step "reserve"\n    at WorkflowRun.check (workflow-run.ts:1:1)`;
}

/** Inserts a dead run that failed replay; returns its id. */
export async function seedNonDeterminismDead(db: Kysely<object>, name: string, version = 1): Promise<string> {
  const id = await seedRun(db, { name, version, status: 'dead', lastError: 'placeholder' });
  await sql`UPDATE leasehold.task SET last_error = ${nonDeterminismError(id, 2)} WHERE id = ${id}`.execute(db);
  return id;
}

/** A concrete moment seen from the database's clock: `now() - agoMs`, as a Date. */
export async function dbTimeAgo(db: Kysely<object>, agoMs: number): Promise<Date> {
  const { rows } = await sql<{ at: Date }>`SELECT now() - ${agoMs} * interval '1 millisecond' AS at`.execute(db);
  return rows[0]!.at;
}
