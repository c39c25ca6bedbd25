// Core's operations on any leased table, run here on core's own task table: the dead-letter
// listing, retry / skip of dead rows (reason recorded in resolution, refused ids reported),
// the bounded retention purge and the monitoring snapshot. The outbox's tests cover the same
// functions through its public API on the outbox table.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  claim,
  leaseDeadList,
  leasePurgeDone,
  leaseRetryDeadMany,
  leaseQueueStats,
  leaseSkipDeadMany,
  leaseStats,
  taskTable,
} from '@leasehold/core';
import { insertTasks, useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();

beforeEach(async () => {
  await sql`TRUNCATE leasehold.task, leasehold.task_group`.execute(t.db);
});

interface Resolved {
  id: string;
  status: string;
  attempts: number;
  leaseVersion: number;
  lastError: string | null;
  resolution: string | null;
  resolved: boolean;
  due: boolean;
  finished: boolean;
}

async function readResolved(ids: readonly string[]): Promise<Resolved[]> {
  const { rows } = await sql<{
    id: string; status: string; attempts: number; lease_version: string; last_error: string | null;
    resolution: string | null; resolved: boolean; due: boolean; finished: boolean;
  }>`
    SELECT id, status, attempts, lease_version, last_error, resolution, resolved_at IS NOT NULL AS resolved,
           available_at <= now() AS due, done_at IS NOT NULL AS finished
    FROM leasehold.task WHERE id = ANY(${[...ids]}::bigint[]) ORDER BY id`.execute(t.db);
  return rows.map((r) => ({
    id: String(r.id), status: r.status, attempts: r.attempts, leaseVersion: Number(r.lease_version), lastError: r.last_error,
    resolution: r.resolution, resolved: r.resolved, due: r.due, finished: r.finished,
  }));
}

async function killed(ids: readonly string[], error: string): Promise<void> {
  await sql`UPDATE leasehold.task SET last_error = ${error}, lease_version = 3 WHERE id = ANY(${[...ids]}::bigint[])`.execute(t.db);
}

describe('the task table', () => {
  it('carries the outbox\'s dead-letter columns, column for column', async () => {
    const { rows } = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }>`
      SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = 'leasehold' AND table_name IN ('task', 'outbox') AND column_name IN ('resolution', 'resolved_at')
      ORDER BY column_name`.execute(t.db);
    const shape = (name: string) => rows.filter((r) => r.table_name === name).map(({ table_name: _t, ...r }) => r);
    expect(shape('task')).toEqual([
      { column_name: 'resolution', data_type: 'text', is_nullable: 'YES', column_default: null },
      { column_name: 'resolved_at', data_type: 'timestamp with time zone', is_nullable: 'YES', column_default: null },
    ]);
    expect(shape('outbox')).toEqual(shape('task'));
  });
});

describe('leaseDeadList', () => {
  it('lists dead tasks by id with the lease fields and the task\'s own row, a page at a time', async () => {
    const [first, second, third] = await insertTasks(t.db, 3, { name: 'email', status: 'dead', attempts: 5, maxAttempts: 5, payload: { to: 'a@b' }, groupKey: 'user:1' });
    await insertTasks(t.db, 1, { status: 'pending' });
    await insertTasks(t.db, 1, { status: 'done' });
    await killed([first!], 'retries exhausted: SMTP 451');

    const page = await leaseDeadList(t.pool, table, { limit: 2, afterId: null });
    expect(page.map((d) => d.id)).toEqual([first, second]);
    expect(page[0]).toMatchObject({
      id: first, name: 'email', payload: { to: 'a@b' }, attempts: 5, maxAttempts: 5, groupKey: 'user:1', dedupKey: null,
      lastError: 'retries exhausted: SMTP 451', createdAt: expect.any(Date),
    });
    expect((await leaseDeadList(t.db, table, { limit: 2, afterId: second! })).map((d) => d.id)).toEqual([third]);
    expect(await leaseDeadList(t.pool, table, { limit: 2, afterId: third! })).toEqual([]);
  });
});

describe('leaseRetryDeadMany', () => {
  it('sends dead tasks back to pending and due, attempts reset, reason in resolution; last_error and the fencing token kept', async () => {
    const [a, b] = await insertTasks(t.db, 2, { name: 'email', status: 'dead', attempts: 12 });
    await killed([a!, b!], 'retries exhausted: SMTP 451');
    expect(await leaseRetryDeadMany(t.pool, table, [b!, a!, a!], 'SMTP fixed')).toEqual({ changed: [a, b], rejected: [] });
    expect(await readResolved([a!, b!])).toEqual([a, b].map((id) => ({
      id, status: 'pending', attempts: 0, leaseVersion: 3, lastError: 'retries exhausted: SMTP 451',
      resolution: 'retried: SMTP fixed', resolved: true, due: true, finished: false,
    })));
    // due at once, and the next claim moves the token forward from where it was
    const claimed = await claim(t.pool, { owner: 'after-retry', batch: 10, lease: '1m' });
    expect(claimed.map((c) => [c.id, c.leaseVersion, c.attempts])).toEqual([[a, 4, 1], [b, 4, 1]]);
  });

  it('changes nothing for unknown or not-dead ids and reports each with its status', async () => {
    const [dead] = await insertTasks(t.db, 1, { status: 'dead' });
    const [pending] = await insertTasks(t.db, 1, { status: 'pending' });
    const [done] = await insertTasks(t.db, 1, { status: 'done' });
    const result = await leaseRetryDeadMany(t.pool, table, [done!, '999999999', dead!, pending!], 'fixed');
    expect(result).toEqual({
      changed: [dead],
      rejected: [{ id: pending, status: 'pending' }, { id: done, status: 'done' }, { id: '999999999', status: null }],
    });
    expect((await readResolved([pending!, done!])).map((r) => [r.status, r.resolution])).toEqual([['pending', null], ['done', null]]);
    // a second retry finds it no longer dead
    expect(await leaseRetryDeadMany(t.pool, table, [dead!], 'again')).toEqual({ changed: [], rejected: [{ id: dead, status: 'pending' }] });
    expect(await leaseRetryDeadMany(t.pool, table, [], 'nothing')).toEqual({ changed: [], rejected: [] });
  });

  it('changes a row once when two people retry it at the same time', async () => {
    const [dead] = await insertTasks(t.db, 1, { status: 'dead' });
    const first = await t.client();
    await first.query('BEGIN');
    expect(await leaseRetryDeadMany(first, table, [dead!], 'first')).toMatchObject({ changed: [dead] });
    const second = await t.client();
    const pid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const racing = leaseRetryDeadMany(second, table, [dead!], 'second');
    // the second statement waits for the first's row lock …
    await expect.poll(async () => (await t.pool.query<{ w: string | null }>(
      'SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]?.w, { timeout: 10_000 }).toBe('Lock');
    await first.query('COMMIT');
    // … then finds the row no longer dead and leaves it alone
    const result = await racing;
    expect(result.changed).toEqual([]);
    expect(result.rejected.map((r) => r.id)).toEqual([dead]);
    expect((await readResolved([dead!]))[0]).toMatchObject({ status: 'pending', resolution: 'retried: first' });
  });

  it('fails whole, changing nothing, when a retried task\'s dedup key is live again', async () => {
    const [dead, other] = await insertTasks(t.db, 2, { name: 'report', status: 'dead' });
    const [live] = await insertTasks(t.db, 1, { name: 'report', status: 'pending' });
    await sql`UPDATE leasehold.task SET dedup_key = 'monthly' WHERE id IN (${dead}, ${live})`.execute(t.db);
    await expect(leaseRetryDeadMany(t.pool, table, [other!, dead!], 'rerun')).rejects.toMatchObject({ code: '23505', constraint: 'task_dedup' });
    expect((await readResolved([dead!, other!])).map((r) => r.status)).toEqual(['dead', 'dead']);
  });
});

describe('leaseSkipDeadMany', () => {
  it('marks dead tasks done with the reason, which unblocks their ordered group', async () => {
    const [head, next] = await insertTasks(t.db, 2, { name: 'sync', groupKey: 'account:7' });
    await sql`UPDATE leasehold.task SET status = 'dead', last_error = 'schema mismatch' WHERE id = ${head}`.execute(t.db);
    // the dead head blocks its group
    expect(await claim(t.pool, { owner: 'x', batch: 10, lease: '1m' })).toEqual([]);

    expect(await leaseSkipDeadMany(t.pool, table, [head!, next!, '999999999'], 'replayed by hand')).toEqual({
      changed: [head], rejected: [{ id: next, status: 'pending' }, { id: '999999999', status: null }],
    });
    expect((await readResolved([head!]))[0]).toMatchObject({
      status: 'done', finished: true, lastError: 'schema mismatch', resolution: 'skipped: replayed by hand', resolved: true,
    });
    expect((await claim(t.pool, { owner: 'y', batch: 10, lease: '1m' })).map((c) => c.id)).toEqual([next]);
  });
});

describe('leasePurgeDone', () => {
  it('deletes at most limit old done tasks per call, oldest first, and nothing unfinished, dead or recent', async () => {
    const old = await insertTasks(t.db, 5, { status: 'done' });
    const [recent] = await insertTasks(t.db, 1, { status: 'done' });
    const [dead] = await insertTasks(t.db, 1, { status: 'dead' });
    const [pending] = await insertTasks(t.db, 1, { status: 'pending' });
    // finished 10, 9, … 6 days ago, in id order; the dead one's done_at is older still and must not matter
    await sql`UPDATE leasehold.task SET done_at = now() - (10 - (id - ${old[0]}::bigint))::int * interval '1 day'
              WHERE id = ANY(${old}::bigint[])`.execute(t.db);
    await sql`UPDATE leasehold.task SET done_at = now() - interval '1 day' WHERE id = ${recent}`.execute(t.db);
    await sql`UPDATE leasehold.task SET done_at = now() - interval '30 days' WHERE id = ${dead}`.execute(t.db);

    const fiveDaysMs = 5 * 86_400_000;
    expect(await leasePurgeDone(t.pool, table, fiveDaysMs, 2)).toBe(2);
    expect(await remaining()).toEqual([...old.slice(2), recent, dead, pending]);
    expect(await leasePurgeDone(t.pool, table, fiveDaysMs, 2)).toBe(2);
    expect(await leasePurgeDone(t.pool, table, fiveDaysMs, 2)).toBe(1);
    expect(await leasePurgeDone(t.pool, table, fiveDaysMs, 2)).toBe(0);
    expect(await remaining()).toEqual([recent, dead, pending]);
  });

  it('skips a done task another session holds instead of waiting for it', async () => {
    const ids = await insertTasks(t.db, 3, { status: 'done' });
    await sql`UPDATE leasehold.task SET done_at = now() - interval '1 hour'`.execute(t.db);
    const holder = await t.client();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM leasehold.task WHERE id = $1 FOR UPDATE', [ids[1]]);
    expect(await leasePurgeDone(t.pool, table, 0, 10)).toBe(2);
    await holder.query('COMMIT');
    expect(await remaining()).toEqual([ids[1]]);
  });
});

async function remaining(): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id`.execute(t.db);
  return rows.map((r) => String(r.id));
}

describe('leaseStats', () => {
  it('is zero on an empty table', async () => {
    expect(await leaseStats(t.pool, table)).toEqual({
      counts: { pending: 0, processing: 0, done: 0, dead: 0 }, oldestPendingAgeMs: null, expiredLeases: 0, attempts: [], estimated: false,
    });
  });

  it('reads counts, oldest unfinished age, expired leases and the attempts histogram in one snapshot', async () => {
    await insertTasks(t.db, 2, { status: 'pending' });
    await insertTasks(t.db, 1, { status: 'pending', attempts: 2 });
    await insertTasks(t.db, 2, { status: 'processing', attempts: 1, leaseUntilOffsetMs: -60_000 });
    await insertTasks(t.db, 1, { status: 'processing', attempts: 1, leaseUntilOffsetMs: 600_000 });
    await insertTasks(t.db, 4, { status: 'done', attempts: 1 });
    await insertTasks(t.db, 1, { status: 'dead', attempts: 12 });
    await sql`UPDATE leasehold.task SET created_at = now() - interval '1 hour' WHERE status = 'pending' AND attempts = 2`.execute(t.db);

    const stats = await leaseStats(t.db, table);
    expect(stats).toMatchObject({
      counts: { pending: 3, processing: 3, done: 4, dead: 1 },
      expiredLeases: 2,
      attempts: [{ attempts: 0, count: 2 }, { attempts: 1, count: 3 }, { attempts: 2, count: 1 }],
    });
    // the hour-old pending task, by the database's clock
    expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(3_600_000);
    expect(stats.oldestPendingAgeMs).toBeLessThan(3_600_000 + 600_000);
  });
});

describe('leaseQueueStats', () => {
  it('counts per name, blocked rows among the pending, and one oldest-pending age: blocked rows wait, rows scheduled for later do not', async () => {
    // a dead head an hour old with two rows behind it; a fresh task; one scheduled for tomorrow
    await insertTasks(t.db, 1, { name: 'sync', status: 'dead', attempts: 3, groupKey: 'acct-1' });
    await insertTasks(t.db, 2, { name: 'sync', groupKey: 'acct-1' });
    await sql`UPDATE leasehold.task SET created_at = now() - interval '1 hour', available_at = now() - interval '1 hour' WHERE name = 'sync'`.execute(t.db);
    await insertTasks(t.db, 1, { name: 'mail' });
    await insertTasks(t.db, 1, { name: 'report', availableOffsetMs: 86_400_000 });

    const queues = await leaseQueueStats(t.pool, table);
    expect(queues.map((q) => q.name)).toEqual(['mail', 'report', 'sync']);
    const [mail, report, sync] = queues;
    expect(sync).toMatchObject({ pending: 2, blocked: 2, dead: 1, processing: 0, done: 0, expiredLeases: 0 });
    expect(sync!.oldestPendingAgeMs).toBeGreaterThanOrEqual(3_600_000);
    expect(mail!.oldestPendingAgeMs).toBeLessThan(600_000);
    expect(report).toMatchObject({ pending: 1, blocked: 0, oldestPendingAgeMs: null });
    // leaseStats uses the same definition over the whole table
    const whole = await leaseStats(t.pool, table);
    expect(Math.abs(whole.oldestPendingAgeMs! - sync!.oldestPendingAgeMs!)).toBeLessThan(1_000);
  });
});
