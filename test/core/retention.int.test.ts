// Retention by default (docs/operations.md, "Retention"): workers delete finished rows past their
// age, in batches, by a turn taken in the database, and keep what someone still needs: a child
// whose parent has not ended, a result someone waits for, a dead row (unless asked), a dead row
// of an ordering group (always), and every unfinished row.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ConfigError, createWorker, defineTask, type RetentionReport } from '@leasehold/core';
import { retentionSettings, retentionTakeTurn } from '@leasehold/core/internal';
import { createDispatcher, outboxTable } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const noop = defineTask<Record<string, never>>('retention-noop', { handler: () => {} });
const EVERY_MS = 100;
/** Turns come every 50–100 ms; the work below takes a few seconds at most on a busy machine. */
const DEADLINE_MS = 300 * EVERY_MS;
const HISTORY = 30_000;

async function count(where: ReturnType<typeof sql>, table = 'task'): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.id('leasehold', table)} WHERE ${where}`.execute(t.db);
  return Number(rows[0]!.n);
}

/** Polls `read` until it returns `want` or the deadline passes; returns the last value read. */
async function settlesTo(read: () => Promise<number>, want: number, deadlineMs = DEADLINE_MS): Promise<number> {
  const until = Date.now() + deadlineMs;
  let value = await read();
  while (value !== want && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
    value = await read();
  }
  return value;
}

describe('retention', () => {
  it('defaults: done and cancelled rows leave after 7 days, dead rows stay, a turn a minute', () => {
    expect(retentionSettings(undefined)).toEqual({ ages: [['done', 7 * 86_400_000], ['cancelled', 7 * 86_400_000]], everyMs: 60_000, batchSize: 5_000 });
    expect(retentionSettings({ done: 0, dead: '30d', cancelled: false })?.ages).toEqual([['done', 0], ['dead', 30 * 86_400_000]]);
    expect(retentionSettings(false)).toBeUndefined();
    expect(retentionSettings({ done: false, cancelled: false })).toBeUndefined();
  });

  it('refuses bad settings at the call, with a ConfigError', () => {
    for (const retention of [{ done: -1 }, { done: 'soon' }, { every: 0 }, { batchSize: 0 }, 'on']) {
      expect(() => createWorker({ pool: t.pool, tasks: [noop], retention: retention as never })).toThrow(ConfigError);
      expect(() => createDispatcher({ pool: t.pool, publisher: { publish: async () => {} }, retention: retention as never })).toThrow(ConfigError);
    }
  });

  it('one caller of all takes a turn, and the next only once it is due', async () => {
    const table = outboxTable();
    const first = await Promise.all(Array.from({ length: 8 }, (_, i) => retentionTakeTurn(t.pool, table, `w${i}`, 60_000)));
    expect(first.filter(Boolean)).toHaveLength(1);
    expect(await retentionTakeTurn(t.pool, table, 'late', 60_000)).toBe(false);
    await sql`UPDATE leasehold.retention SET next_at = now() - interval '1 second' WHERE table_name = 'outbox'`.execute(t.db);
    expect(await retentionTakeTurn(t.pool, table, 'next', 60_000)).toBe(true);
    const { rows } = await sql<{ taken_by: string }>`SELECT taken_by FROM leasehold.retention WHERE table_name = 'outbox'`.execute(t.db);
    expect(rows[0]!.taken_by).toBe('next');
  });

  it(`workers delete ${HISTORY.toLocaleString('en')} old finished rows with their steps and signals, and keep what is still needed`, async () => {
    await sql`TRUNCATE leasehold.task, leasehold.task_group RESTART IDENTITY`.execute(t.db);
    // history: done rows of every age up to 20 days, a tenth of them cancelled, each with a step
    // and a signal
    await sql`
      INSERT INTO leasehold.task (name, status, attempts, lease_version, done_at)
      SELECT 'history', CASE WHEN g % 10 = 0 THEN 'cancelled' ELSE 'done' END, 1, 1, now() - (g % 20) * interval '1 day' - interval '1 hour'
      FROM generate_series(1, ${HISTORY}::int) AS g`.execute(t.db);
    await sql`INSERT INTO leasehold.task_step (task_id, name, done, lease_version) SELECT id, 's', true, 1 FROM leasehold.task`.execute(t.db);
    await sql`INSERT INTO leasehold.task_signal (task_id, name) SELECT id, 'go' FROM leasehold.task`.execute(t.db);
    const old = await count(sql`done_at < now() - interval '7 days'`);
    // a parent still waiting for its children: its old done and dead children stay
    const [waiting] = await ids(sql`INSERT INTO leasehold.task (name, status, wait_for) VALUES ('parent', 'waiting', 'children') RETURNING id`);
    const keptChildren = await ids(sql`
      INSERT INTO leasehold.task (name, status, attempts, done_at, available_at, parent_id)
      SELECT 'child', s, 1, now() - interval '30 days', now() - interval '30 days', ${waiting}::bigint FROM unnest(ARRAY['done', 'dead']) AS s RETURNING id`);
    // a parent that ended done: its old children go
    const [ended] = await ids(sql`INSERT INTO leasehold.task (name, status, done_at) VALUES ('parent', 'done', now()) RETURNING id`);
    const goneChildren = await ids(sql`
      INSERT INTO leasehold.task (name, status, attempts, done_at, parent_id)
      SELECT 'child', 'done', 1, now() - interval '30 days', ${ended}::bigint FROM generate_series(1, 3) RETURNING id`);
    // an awaited result that ended half an hour ago (older than the age, within the hour's hold)
    const [awaited] = await ids(sql`
      INSERT INTO leasehold.task (name, status, done_at, result_wanted) VALUES ('awaited', 'done', now() - interval '30 minutes', true) RETURNING id`);
    // dead rows, one in an ordering group; unfinished rows of every kind, all old
    const dead = await ids(sql`
      INSERT INTO leasehold.task (name, status, attempts, available_at, created_at, group_key)
      VALUES ('dead', 'dead', 12, now() - interval '30 days', now() - interval '30 days', NULL),
             ('dead', 'dead', 12, now() - interval '30 days', now() - interval '30 days', 'g1') RETURNING id`);
    await sql`INSERT INTO leasehold.task_group (group_key, head_id) VALUES ('g1', ${dead[1]}::bigint)`.execute(t.db);
    await sql`
      INSERT INTO leasehold.task (name, status, created_at, available_at, scheduled)
      VALUES ('other', 'pending', now() - interval '30 days', now() + interval '1 day', true)`.execute(t.db);

    // first with the default ages (7 days), then everything finished at once with dead rows too
    const reports: RetentionReport[] = [];
    const worker = track(createWorker({ pool: t.pool, tasks: [noop], logger: null, retention: { every: EVERY_MS, batchSize: 500 } }));
    worker.on('retention:purged', (report) => reports.push(report));
    await worker.start();
    expect(await settlesTo(() => count(sql`name = 'history' AND done_at < now() - interval '7 days'`), 0)).toBe(0);
    await worker.stop({ timeout: 0 });
    expect(await count(sql`name = 'history'`)).toBe(HISTORY - old);
    const deleted = reports.reduce((n, r) => n + r.deleted.done + r.deleted.cancelled, 0);
    expect(deleted).toBe(old + goneChildren.length);
    expect(reports.every((r) => r.table === 'leasehold.task' && r.batches >= 1 && r.deleted.dead === 0)).toBe(true);
    // steps and signals went with their tasks (core migration 8's delete trigger)
    expect(await count(sql`task_id NOT IN (SELECT id FROM leasehold.task)`, 'task_step')).toBe(0);
    expect(await count(sql`task_id NOT IN (SELECT id FROM leasehold.task)`, 'task_signal')).toBe(0);
    expect(await count(sql`true`, 'task_step')).toBe(HISTORY - old);

    const atOnce = track(createWorker({ pool: t.pool, tasks: [noop], logger: null, retention: { done: 0, cancelled: 0, dead: 0, every: EVERY_MS } }));
    await atOnce.start();
    expect(await settlesTo(() => count(sql`name = 'history'`), 0)).toBe(0);
    expect(await settlesTo(() => count(sql`name = 'dead' AND group_key IS NULL`), 0)).toBe(0);
    await atOnce.stop({ timeout: 0 });
    const left = await ids(sql`SELECT id FROM leasehold.task ORDER BY id`);
    // the waiting parent and its children, the awaited result, the grouped dead row, the pending row
    expect(left).toEqual([waiting!, ...keptChildren, awaited!, dead[1]!, expect.any(String)]);
    expect(await count(sql`name = 'other' AND status = 'pending'`)).toBe(1);
  });

  it('the outbox dispatcher deletes delivered messages past their age', async () => {
    // the turn test above left the outbox's next turn a minute away
    await sql`TRUNCATE leasehold.outbox, leasehold.retention RESTART IDENTITY`.execute(t.db);
    await sql`
      INSERT INTO leasehold.outbox (aggregate_type, aggregate_id, event_type, payload, status, attempts, done_at, available_at)
      SELECT 'order', g::text, 'Placed', '{}', CASE WHEN g % 100 = 0 THEN 'dead' ELSE 'done' END, 1,
             now() - (g % 2) * interval '10 days', now() - interval '10 days'
      FROM generate_series(1, 5000) AS g`.execute(t.db);
    const oldDone = await count(sql`status = 'done' AND done_at < now() - interval '7 days'`, 'outbox');
    const dispatcher = track(createDispatcher({ pool: t.pool, publisher: { publish: async () => {} }, logger: null, retention: { every: EVERY_MS } }));
    const reports: RetentionReport[] = [];
    dispatcher.on('retention:purged', (report) => reports.push(report));
    await dispatcher.start();
    expect(await settlesTo(() => count(sql`status = 'done' AND done_at < now() - interval '7 days'`, 'outbox'), 0)).toBe(0);
    await dispatcher.stop({ timeout: 0 });
    expect(reports.reduce((n, r) => n + r.deleted.done, 0)).toBe(oldDone);
    expect(reports[0]!.table).toBe('leasehold.outbox');
    // the recent delivered ones and every dead one stay
    expect(await count(sql`true`, 'outbox')).toBe(5000 - oldDone);
    expect(await count(sql`status = 'dead'`, 'outbox')).toBe(50);
  });
});

async function ids(query: ReturnType<typeof sql>): Promise<string[]> {
  const { rows } = await (query as ReturnType<typeof sql<{ id: string }>>).execute(t.db);
  return rows.map((r) => String(r.id));
}
