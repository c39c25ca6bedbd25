// A task under a limit that leaves 'processing' frees a slot, and the workers waiting for one are
// woken (core migration 7's trigger). A worker's write of such rows does that wake-up once, before
// it reaches them, and the trigger then calls its function for none of them (migration 22); the
// wake-up itself must still come.
import { sql } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createWorker, defineLimit, defineTask, enqueue, taskTable } from '@leasehold/core';
import { leaseFinalizeMany, toDone, toRetry, type FinalizeItem } from '@leasehold/core/internal';
import { useTestDatabase } from '../fixtures.js';
import { gate, nextEvent, useWorkers } from '../workers.js';
import { serverNow, waitUntil, wakeUntil } from '../wake-state.js';

const t = useTestDatabase();
const track = useWorkers();
const table = taskTable();
const ROWS = 50;
const CHANNEL = 'leasehold:leasehold.task';
/** Far past every deadline below: only a notification can start the waiting task in time. */
const NEVER_POLL = '60s';
const WAKE_DEADLINE_MS = 20_000;

/** ROWS leased rows under a limit, as a claim leaves them. */
async function leasedUnderLimit(): Promise<FinalizeItem[]> {
  await sql`TRUNCATE leasehold.task`.execute(t.db);
  const { rows } = await sql<{ id: string }>`
    INSERT INTO leasehold.task (name, status, flow, flow_key, lease_version, attempts, lease_owner, lease_until)
    SELECT 'slot-freed', 'processing', 'slot-freed', '', 1, 1, 'me', now() + interval '1 hour' FROM generate_series(1, ${ROWS})
    RETURNING id`.execute(t.db);
  return rows.map((r) => ({ id: r.id, leaseVersion: 1, transition: toDone(), groupKey: null, parentId: null }));
}

/** Calls of notify_inserted() so far in this session (pending counts included: read in one transaction). */
async function notifyCalls(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query<{ calls: string | null }>(
    `SELECT sum(calls) AS calls FROM pg_stat_xact_user_functions WHERE schemaname = 'leasehold' AND funcname = 'notify_inserted'`,
  );
  return Number(rows[0]?.calls ?? 0);
}

async function callsWhileWriting(client: pg.ClientBase, items: readonly FinalizeItem[]): Promise<number> {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL track_functions = 'pl'`);
    const before = await notifyCalls(client);
    const results = await leaseFinalizeMany(client, table, items);
    expect(results.every((r) => r.won)).toBe(true);
    return (await notifyCalls(client)) - before;
  } finally {
    await client.query('COMMIT');
  }
}

describe('a write that frees slots of a limit', () => {
  it("wakes once before reaching its rows: the trigger's function runs for none of them, where it ran for each", async () => {
    const client = await t.client();
    const unmarked = await callsWhileWriting(client, await leasedUnderLimit());
    expect(unmarked).toBe(ROWS);
    const marked = await callsWhileWriting(client, (await leasedUnderLimit()).map((i) => ({ ...i, limited: true })));
    expect(marked).toBe(0);
    // the general form of the write (a retry among the rows) too
    const mixed = (await leasedUnderLimit()).map((i, n) => ({ ...i, limited: true, transition: n === 0 ? toRetry(0, 'again') : i.transition }));
    expect(await callsWhileWriting(client, mixed)).toBe(0);
  });

  it('still notifies while a worker may be asleep, and holds the wake lock shared until it commits', async () => {
    const items = (await leasedUnderLimit()).map((i) => ({ ...i, limited: true }));
    const listener = await t.client();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.channel));
    await listener.query(`LISTEN "${CHANNEL}"`);
    // a worker announced that it sleeps for the next minute (ended below: the next test waits for
    // real workers' announcements to lapse)
    await sql`SELECT setval('leasehold.task_wake', (date_part('epoch', clock_timestamp()) * 1000)::bigint + 60000)`.execute(t.db);
    try {
      const writer = await t.client();
      await writer.query('BEGIN');
      await leaseFinalizeMany(writer, table, items);
      const pid = (await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const { rows } = await t.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted AND pid = $1`,
        [pid],
      );
      expect(rows[0]!.n).toBe(1);
      expect(heard).toEqual([]); // sent at commit
      await writer.query('COMMIT');
      await expect.poll(() => heard, { timeout: 10_000 }).toContain(CHANNEL);
    } finally {
      await sql`SELECT setval('leasehold.task_wake', 0)`.execute(t.db);
    }
  });

  it("wakes a worker that sleeps waiting for the limit's slot, which another worker's task held", async () => {
    const limit = defineLimit('slot-freed-e2e', { concurrency: 1 });
    const busy = gate();
    const holder = defineTask('slot-freed-hold', { limit, handler: () => busy.wait });
    const waiter = defineTask('slot-freed-wait', { limit, handler: () => {} });
    // the holder's worker does not run the waiting task: only a wake-up brings the other worker to it
    const a = track(createWorker({ pool: t.pool, tasks: [holder], concurrency: 1, pollInterval: NEVER_POLL }));
    await a.start();
    const held = nextEvent(a, 'task:claimed', () => true, WAKE_DEADLINE_MS);
    await enqueue(t.pool, holder, {});
    await held;
    const waiting = await enqueue(t.pool, waiter, {});
    // nobody sleeps (the holder's worker is busy) once its announcement from before has lapsed:
    // then only the waiting task's worker, started now, can announce that it sleeps, and only
    // after a claim that found the task and the limit full
    await waitUntil('the announcements lapse', async () => (await wakeUntil(t.db)) < (await serverNow(t.db)));
    const b = track(createWorker({ pool: t.pool, tasks: [waiter], concurrency: 1, pollInterval: NEVER_POLL }));
    await b.start();
    await waitUntil('the waiting task\'s worker announces that it sleeps', async () => (await wakeUntil(t.db)) > (await serverNow(t.db)));
    // it claims once more after announcing; a sleeping worker renews its announcement every second
    const announced = await wakeUntil(t.db);
    await waitUntil('the waiting task\'s worker sleeps', async () => (await wakeUntil(t.db)) > announced);
    expect((await sql<{ status: string }>`SELECT status FROM leasehold.task WHERE id = ${waiting.id}`.execute(t.db)).rows[0]!.status).toBe('pending');
    const started = nextEvent(b, 'task:succeeded', (e) => e.task.id === waiting.id, WAKE_DEADLINE_MS);
    busy.open();
    await started;
    await Promise.all([a.stop(), b.stop()]);
  });
});
