import { randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { withDatabase } from './global-setup.js';

/** A database of this test file's own, cloned from the migrated template. */
export interface TestDatabase {
  /** URL of the file's database. */
  readonly url: string;
  /** A pool on it (max 20). */
  readonly pool: pg.Pool;
  /** Kysely over `pool`. */
  readonly db: Kysely<object>;
  /** A new client on the database; closed after the file. */
  client(): Promise<pg.Client>;
}

/**
 * Registers hooks that give this test file its own database (so files run in parallel) and
 * drop it afterwards. Read the returned object's fields inside tests and hooks only.
 */
export function useTestDatabase(): TestDatabase {
  const name = `lh_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const adminUrl = inject('adminUrl');
  const url = withDatabase(adminUrl, name);
  const clients: pg.Client[] = [];
  let pool: pg.Pool | undefined;
  let db: Kysely<object> | undefined;

  beforeAll(async () => {
    await adminQuery(adminUrl, `CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`);
    pool = new pg.Pool({ connectionString: url, max: 20 });
    // DROP DATABASE … WITH (FORCE) after the file ends its sessions; tests that kill backends
    // on purpose make idle clients fail too. Neither is a test failure.
    pool.on('error', () => undefined);
    db = new Kysely<object>({ dialect: new PostgresDialect({ pool }) });
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await db?.destroy();
    await sessionsEnded(adminUrl, name, 5_000);
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });

  return {
    url,
    get pool() {
      if (!pool) throw new Error('useTestDatabase: pool used outside a test');
      return pool;
    },
    get db() {
      if (!db) throw new Error('useTestDatabase: db used outside a test');
      return db;
    },
    async client() {
      const c = new pg.Client({ connectionString: url });
      c.on('error', () => undefined);
      await c.connect();
      clients.push(c);
      return c;
    },
  };
}

/**
 * Waits (up to `deadlineMs`) until no session is connected to database `name`. A pg pool's
 * `end()` resolves before its clients' connections have closed; a FORCE drop that terminated one
 * of them then sent it a FATAL error, which such a pool, without an 'error' listener, threw as an
 * uncaught exception (it failed a CI run). Sessions a test leaves open on purpose are still ended
 * by the drop once the deadline passes.
 */
async function sessionsEnded(adminUrl: string, name: string, deadlineMs: number): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const until = Date.now() + deadlineMs;
    while (Date.now() < until) {
      const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
      if (rows[0]!.n === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await admin.end();
  }
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  // CREATE DATABASE … TEMPLATE fails while another session is copying the same template
  for (let attempt = 0; ; attempt++) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      await admin.query(text);
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== '55006' || attempt >= 50) throw error; // object_in_use
    } finally {
      await admin.end();
    }
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
  }
}

/** Fields a test can set on a task row inserted directly, in any status. */
export interface TaskFactoryInput {
  name?: string;
  payload?: unknown;
  status?: 'pending' | 'processing' | 'done' | 'dead';
  priority?: number;
  groupKey?: string | null;
  attempts?: number;
  maxAttempts?: number;
  leaseVersion?: number;
  /** `lease_until` relative to the database's now(), in ms (negative: already expired). */
  leaseUntilOffsetMs?: number;
  /** `available_at` relative to now(), in ms. */
  availableOffsetMs?: number;
}

/**
 * Inserts tasks straight into `leasehold.task`; returns their ids in order. Rows of a group get
 * the head and `blocked` markers the way migration 3 computes them for existing rows (the
 * lowest unfinished row is the head), and a row due later is `scheduled`.
 */
export async function insertTasks(db: Kysely<object>, count: number, input: TaskFactoryInput = {}): Promise<string[]> {
  const result = await sql<{ id: string }>`
    INSERT INTO leasehold.task (name, payload, status, priority, group_key, attempts, max_attempts,
                                lease_version, lease_owner, lease_until, available_at, scheduled)
    SELECT ${input.name ?? 'test'}, ${JSON.stringify(input.payload ?? {})}::jsonb, ${input.status ?? 'pending'},
           ${input.priority ?? 0}, ${input.groupKey ?? null}, ${input.attempts ?? 0}, ${input.maxAttempts ?? 12},
           ${input.leaseVersion ?? 0},
           ${input.status === 'processing' ? 'factory' : null},
           ${input.leaseUntilOffsetMs === undefined ? null : sql`now() + ${input.leaseUntilOffsetMs} * interval '1 millisecond'`},
           now() + ${input.availableOffsetMs ?? 0} * interval '1 millisecond',
           ${(input.status ?? 'pending') === 'pending' && (input.availableOffsetMs ?? 0) > 0}
    FROM generate_series(1, ${count})
    ORDER BY generate_series
    RETURNING id
  `.execute(db);
  if (input.groupKey != null) await recomputeGroupHeads(db, input.groupKey);
  return result.rows.map((r) => String(r.id));
}

/** Sets a group's head and blocked rows from its rows as they stand, as migration 3 does. */
export async function recomputeGroupHeads(db: Kysely<object>, groupKey: string): Promise<void> {
  await sql`DELETE FROM leasehold.task_group WHERE group_key = ${groupKey}`.execute(db);
  await sql`
    INSERT INTO leasehold.task_group (group_key, head_id)
    SELECT group_key, min(id) FROM leasehold.task
    WHERE group_key = ${groupKey} AND status IN ('pending', 'processing', 'dead')
    GROUP BY group_key`.execute(db);
  await sql`
    UPDATE leasehold.task AS t SET blocked = (t.status = 'pending' AND t.id > g.head_id)
    FROM leasehold.task_group AS g
    WHERE t.group_key = g.group_key AND g.group_key = ${groupKey}`.execute(db);
}

/** One task row as stored, with times as ms relative to the database's now(). */
export interface StoredTask {
  id: string;
  status: string;
  attempts: number;
  leaseVersion: number;
  lastError: string | null;
  availableInMs: number;
  leaseOwner: string | null;
  doneAt: Date | null;
}

/** Reads a task row back. */
export async function readTask(db: Kysely<object>, id: string): Promise<StoredTask> {
  const { rows } = await sql<{
    id: string; status: string; attempts: number; lease_version: string; last_error: string | null;
    available_in_ms: number; lease_owner: string | null; done_at: Date | null;
  }>`
    SELECT id, status, attempts, lease_version, last_error, lease_owner, done_at,
           extract(epoch FROM available_at - now()) * 1000 AS available_in_ms
    FROM leasehold.task WHERE id = ${id}
  `.execute(db);
  const r = rows[0];
  if (!r) throw new Error(`no task ${id}`);
  return {
    id: String(r.id), status: r.status, attempts: r.attempts, leaseVersion: Number(r.lease_version),
    lastError: r.last_error, availableInMs: Number(r.available_in_ms), leaseOwner: r.lease_owner, doneAt: r.done_at,
  };
}

/** Moves time for a task: makes it due now (instead of sleeping through a backoff). */
export async function makeDue(db: Kysely<object>, id: string): Promise<void> {
  await sql`UPDATE leasehold.task SET available_at = now() WHERE id = ${id}`.execute(db);
}

/** Waits, polling the database's clock, until the task's lease has run out. */
export async function waitForLeaseExpiry(db: Kysely<object>, id: string, deadlineMs = 10_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const { rows } = await sql<{ expired: boolean }>`
      SELECT lease_until < now() AS expired FROM leasehold.task WHERE id = ${id}`.execute(db);
    if (rows[0]?.expired) return;
    if (Date.now() - started > deadlineMs) throw new Error(`lease of task ${id} did not expire within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Waits until `count` sessions of this database wait on a lock (a row lock, an advisory lock…):
 * proof that a writer is blocked, not merely slow.
 */
export async function waitForLockWaiters(db: Kysely<object>, count = 1, deadlineMs = 10_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(db);
    if (Number(rows[0]?.n) >= count) return;
    if (Date.now() - started > deadlineMs) throw new Error(`no ${count} session(s) waiting on a lock within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
