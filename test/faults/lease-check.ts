// After every step of the property test: the database must equal the reference model, and the
// invariants that relate a step to the one before must hold.
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { expect } from 'vitest';
import type { LeaseModel, StoredRow } from './lease-model.js';

/** The system under test: the real database, and the last snapshot taken of it. */
export interface Real {
  readonly pool: pg.Pool;
  readonly db: Kysely<object>;
  previous: Map<string, StoredRow>;
}

/** Reads every task row in the model's terms (times as booleans against the server's now()). */
export async function snapshot(db: Kysely<object>): Promise<Map<string, StoredRow>> {
  const { rows } = await sql<StoredRow>`
    SELECT id::text, name, status, attempts, max_attempts, lease_version::int AS lease_version, lease_owner,
           lease_until IS NOT NULL AS has_lease,
           coalesce(lease_until < now(), false) AS expired,
           available_at <= now() AS due,
           blocked, scheduled,
           (SELECT g.head_id::text FROM leasehold.task_group AS g WHERE g.group_key = t.group_key) AS group_head,
           last_error, done_at::text
    FROM leasehold.task AS t ORDER BY id`.execute(db);
  return new Map(rows.map((r) => [r.id, r]));
}

/** Compares the database with the model and with the previous snapshot; records the new one. */
export async function checkAgainstModel(model: LeaseModel, real: Real): Promise<void> {
  const now = await snapshot(real.db);
  expect([...now.keys()]).toEqual(model.list().map((t) => t.id));
  for (const t of model.list()) {
    const row = now.get(t.id)!;
    const where = `task ${t.id}`;
    expect(row.status, where).toBe(t.status);
    expect(row.attempts, where).toBe(t.attempts);
    expect(row.lease_version, where).toBe(t.leaseVersion);
    expect(row.last_error, where).toBe(t.lastError);
    // attempts grow only by claiming, and a claim never goes past the maximum (reap takes over)
    expect(row.attempts, `${where}: attempts within max_attempts`).toBeLessThanOrEqual(row.max_attempts);
    expect(row.done_at !== null, `${where}: done_at iff done`).toBe(t.status === 'done');
    if (t.status === 'processing') {
      expect(row.lease_owner, where).toBe(t.owner);
      expect(row.has_lease, where).toBe(true);
      expect(row.expired, `${where}: lease expired`).toBe(t.expired);
    } else {
      // only an owned row carries a lease
      expect(row.lease_owner, where).toBeNull();
      expect(row.has_lease, where).toBe(false);
    }
    if (t.status === 'pending') {
      expect(row.due, `${where}: due`).toBe(t.due);
      expect(row.scheduled, `${where}: scheduled`).toBe(t.scheduled);
    }
    // only a group's head is unblocked, and its group row points at it
    const head = model.list().find((p) => p.groupKey !== null && p.groupKey === t.groupKey && ['pending', 'processing', 'dead'].includes(p.status));
    expect(row.blocked, `${where}: blocked iff pending behind its group's head`).toBe(t.status === 'pending' && head !== undefined && head.id !== t.id);
    if (head?.id === t.id) expect(row.group_head, `${where}: its group's head`).toBe(t.id);

    const before = real.previous.get(t.id);
    if (!before) continue;
    expect(row.lease_version, `${where}: lease_version only grows`).toBeGreaterThanOrEqual(before.lease_version);
    // (its group's head is the group's, not the row's: it moves on)
    if (before.status === 'done') expect({ ...row, group_head: null }, `${where}: a done task never changes`).toEqual({ ...before, group_head: null });
  }
  real.previous = now;
}
