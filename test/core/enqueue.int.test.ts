import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  createWorker,
  defineTask,
  enqueue,
  enqueueMany,
  isLeaseholdError,
  PayloadValidationError,
} from '@leasehold/core';
import { readTask, useTestDatabase, waitForLockWaiters } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

const ran: string[] = [];
const greet = defineTask<{ name: string }>('greet', { handler: async ({ name }) => void ran.push(name) });
const strict = defineTask('strict', {
  validate: {
    parse(input: unknown): { n: number } {
      const n = (input as { n?: unknown })?.n;
      if (typeof n !== 'number') throw new Error('n must be a number');
      return { n };
    },
  },
  handler: async () => {},
});
const ordered = defineTask<{ step: number }>('ordered-step', { ordered: true, handler: async () => {} });

async function countTasks(name: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE name = ${name}`.execute(t.db);
  return Number(rows[0]?.n);
}

describe('enqueue inside the application transaction', () => {
  it('a rolled-back Kysely transaction leaves no task; a committed one is run by the worker', async () => {
    await t.db
      .transaction()
      .execute(async (trx) => {
        await enqueue(trx, greet, { name: 'rolled back' });
        throw new Error('the application failed');
      })
      .catch(() => undefined);
    expect(await countTasks('greet')).toBe(0);

    const worker = track(createWorker({ pool: t.pool, tasks: [greet], pollInterval: '10s' }));
    await worker.start();
    const done = nextEvent(worker, 'task:succeeded');
    const { id } = await t.db.transaction().execute((trx) => enqueue(trx, greet, { name: 'committed' }));
    expect((await done).task.id).toBe(id);
    expect(ran).toEqual(['committed']);
    await worker.stop();
  });

  it('a rolled-back pg transaction leaves no task; a committed one is stored', async () => {
    const client = await t.client();
    await client.query('BEGIN');
    await enqueue(client, greet, { name: 'pg rolled back' });
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    const { id } = await enqueue(client, greet, { name: 'pg committed' });
    await client.query('COMMIT');
    const { rows } = await sql<{ payload: unknown }>`SELECT payload FROM leasehold.task WHERE name = 'greet' AND status = 'pending'`.execute(t.db);
    expect(rows).toEqual([{ payload: { name: 'pg committed' } }]);
    expect((await readTask(t.db, id)).status).toBe('pending');
  });

  it('eight concurrent enqueues of one dedup key make one task and all return it', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.db.transaction().execute((trx) => enqueue(trx, greet, { name: `dup ${i}` }, { dedupKey: 'welcome:42' })),
      ),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => r.inserted)).toHaveLength(1);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE dedup_key = 'welcome:42'`.execute(t.db);
    expect(rows[0]?.n).toBe('1');
  });

  it('enqueueMany inserts a batch in one statement, in order, folding repeated dedup keys', async () => {
    const items = Array.from({ length: 500 }, (_, i) => ({ payload: { name: `bulk ${i}` } }));
    const result = await enqueueMany(t.pool, greet, [...items, { payload: { name: 'a' }, dedupKey: 'k' }, { payload: { name: 'b' }, dedupKey: 'k' }]);
    expect(result).toHaveLength(502);
    const ids = result.slice(0, 500).map((r) => BigInt(r.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    expect(result[501]).toEqual({ id: result[500]!.id, inserted: false });
  });

  it('enqueueMany without group or dedup keys returns each item its own row, in input order, in a transaction too', async () => {
    const items = Array.from({ length: 300 }, (_, i) => ({ payload: { name: `plain ${i}` }, priority: i % 3, ...(i % 7 === 0 ? { delay: '1h' as const } : {}) }));
    const result = await t.db.transaction().execute((trx) => enqueueMany(trx, greet, items));
    expect(result.every((r) => r.inserted)).toBe(true);
    const ids = result.map((r) => BigInt(r.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    const stored = await sql<{ id: string; name: string; priority: number; scheduled: boolean }>`
      SELECT id::text, payload->>'name' AS name, priority, scheduled FROM leasehold.task WHERE id = ANY(${result.map((r) => r.id)}::bigint[])`.execute(t.db);
    const byId = new Map(stored.rows.map((r) => [r.id, r]));
    result.forEach((r, i) => {
      expect(byId.get(r.id)).toEqual({ id: r.id, name: `plain ${i}`, priority: i % 3, scheduled: i % 7 === 0 });
    });
  });

  it('enqueueMany of plain items (one array of payloads) maps every id to its item, with concurrent batches drawing ids between them', async () => {
    const batch = (tag: string, n: number) => Array.from({ length: n }, (_, i) => ({ payload: { name: `${tag} ${i}` }, priority: 3, maxAttempts: 4 }));
    // two uniform batches at once (their ids interleave) and a mixed one (the general statement)
    const [a, b, mixed] = await Promise.all([
      enqueueMany(t.pool, greet, batch('a', 5_000)),
      t.db.transaction().execute((trx) => enqueueMany(trx, greet, batch('b', 5_000))),
      enqueueMany(t.pool, greet, [...batch('m', 3), { payload: { name: 'm later' }, delay: '1h' }]),
    ]);
    for (const [tag, result] of [['a', a], ['b', b]] as const) {
      expect(result).toHaveLength(5_000);
      expect(result.every((r) => r.inserted)).toBe(true);
      const ids = result.map((r) => BigInt(r.id));
      expect(ids).toEqual([...ids].sort((x, y) => (x < y ? -1 : 1)));
      const stored = await sql<{ id: string; name: string; priority: number; max_attempts: number; scheduled: boolean; due: boolean }>`
        SELECT id::text, payload->>'name' AS name, priority, max_attempts, scheduled, available_at <= now() AS due
        FROM leasehold.task WHERE id = ANY(${result.map((r) => r.id)}::bigint[])`.execute(t.db);
      const byId = new Map(stored.rows.map((r) => [r.id, r]));
      result.forEach((r, i) => {
        expect(byId.get(r.id)).toEqual({ id: r.id, name: `${tag} ${i}`, priority: 3, max_attempts: 4, scheduled: false, due: true });
      });
    }
    expect(mixed.map((r) => r.inserted)).toEqual([true, true, true, true]);
  });

  it('enqueueMany of plain items maps ids to items both when they are one span and when ids were drawn between them', async () => {
    const batch = (tag: string) => Array.from({ length: 1_000 }, (_, i) => ({ payload: { name: `${tag} ${i}` } }));
    const check = async (tag: string, result: readonly { id: string }[]) => {
      const stored = await sql<{ id: string; name: string }>`
        SELECT id::text, payload->>'name' AS name FROM leasehold.task WHERE id = ANY(${result.map((r) => r.id)}::bigint[])`.execute(t.db);
      const byId = new Map(stored.rows.map((r) => [r.id, r.name]));
      expect(result.map((r) => byId.get(r.id))).toEqual(batch(tag).map((item) => item.payload.name));
      const ids = result.map((r) => BigInt(r.id));
      return ids[ids.length - 1]! - ids[0]! + 1n === BigInt(ids.length);
    };
    // alone, the batch draws consecutive ids: the statement answers with the first and the count
    expect(await check('solo', await enqueueMany(t.pool, greet, batch('solo')))).toBe(true);
    // a row trigger that draws an id of its own after every third row stands in, deterministically,
    // for a concurrent producer drawing ids in the middle of the batch
    await sql`CREATE FUNCTION leasehold.test_draw_gap() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id % 3 = 0 THEN PERFORM nextval('leasehold.task_id_seq'); END IF;
        RETURN NEW;
      END $$`.execute(t.db);
    await sql`CREATE TRIGGER test_draw_gap BEFORE INSERT ON leasehold.task FOR EACH ROW EXECUTE FUNCTION leasehold.test_draw_gap()`.execute(t.db);
    try {
      expect(await check('gaps', await enqueueMany(t.pool, greet, batch('gaps')))).toBe(false);
      expect(await check('gaps trx', await t.db.transaction().execute((trx) => enqueueMany(trx, greet, batch('gaps trx'))))).toBe(false);
    } finally {
      await sql`DROP TRIGGER test_draw_gap ON leasehold.task`.execute(t.db);
      await sql`DROP FUNCTION leasehold.test_draw_gap()`.execute(t.db);
    }
  });

  it('a single enqueue without keys stores its options: priority, attempts, a delay (scheduled) or a run time', async () => {
    const soon = await enqueue(t.pool, greet, { name: 'single' }, { priority: 5, maxAttempts: 2 });
    const later = await enqueue(t.pool, greet, { name: 'later' }, { delay: '1h' });
    const at = new Date(Date.now() + 86_400_000);
    const dated = await enqueue(t.pool, greet, { name: 'dated' }, { runAt: at });
    const rows = await sql<{ id: string; priority: number; max_attempts: number; scheduled: boolean; at: Date }>`
      SELECT id::text, priority, max_attempts, scheduled, available_at AS at FROM leasehold.task
      WHERE id = ANY(${[soon.id, later.id, dated.id]}::bigint[]) ORDER BY id`.execute(t.db);
    expect(rows.rows.map((r) => [r.priority, r.max_attempts, r.scheduled])).toEqual([[5, 2, false], [0, greet.maxAttempts, true], [0, greet.maxAttempts, true]]);
    expect(rows.rows[2]!.at.getTime()).toBe(at.getTime());
    expect([soon, later, dated].every((r) => r.inserted)).toBe(true);
  });

  it('rejects an invalid payload with a typed error at enqueue, writing nothing', async () => {
    const error = await enqueue(t.pool, strict, { n: 'one' } as unknown as { n: number }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadValidationError);
    expect(isLeaseholdError(error, 'PAYLOAD_VALIDATION')).toBe(true);
    expect((error as Error).message).toContain('n must be a number');
    expect(await countTasks('strict')).toBe(0);
    // not JSON: a bigint cannot be stored as jsonb
    const before = await countTasks('greet');
    await expect(enqueue(t.pool, greet, { name: 2n as unknown as string })).rejects.toBeInstanceOf(PayloadValidationError);
    expect(await countTasks('greet')).toBe(before);
  });

  it('checks options before any SQL: ordered tasks need a groupKey; NaN priority and negative delay are refused', async () => {
    // @ts-expect-error the types require the groupKey too (test/types); this checks the run-time guard
    await expect(enqueue(t.pool, ordered, { step: 1 })).rejects.toMatchObject({ code: 'CONFIG', option: 'groupKey' });
    await expect(enqueue(t.pool, greet, { name: 'x' }, { priority: Number.NaN })).rejects.toMatchObject({ option: 'priority' });
    await expect(enqueue(t.pool, greet, { name: 'x' }, { delay: -1 })).rejects.toMatchObject({ option: 'delay' });
    await expect(enqueue(t.pool, greet, { name: 'x' }, { runAt: new Date(Number.NaN) })).rejects.toMatchObject({ option: 'runAt' });
    await expect(enqueue(t.pool, greet, { name: 'x' }, { schema: 'no;pe' })).rejects.toBeInstanceOf(ConfigError);
  });

  it('producers of one group are serialised until commit: the second committer never gets the smaller id', async () => {
    const first = await t.client();
    const second = await t.client();
    await first.query('BEGIN');
    const a = await enqueue(first, ordered, { step: 1 }, { groupKey: 'order-7' });
    await second.query('BEGIN');
    // blocks on the group's lock until `first` commits, so it can only get a later id
    const pendingB = enqueue(second, ordered, { step: 2 }, { groupKey: 'order-7' });
    let inserted = false;
    void pendingB.then(() => (inserted = true));
    // the second producer is seen waiting on the group's lock, not merely slow
    await waitForLockWaiters(t.db);
    expect(inserted).toBe(false);
    await first.query('COMMIT');
    const b = await pendingB;
    await second.query('COMMIT');
    expect(BigInt(b.id) > BigInt(a.id)).toBe(true);
  });

  it('run-at and delay move available_at', async () => {
    const later = await enqueue(t.pool, greet, { name: 'later' }, { delay: '1h' });
    const at = await enqueue(t.pool, greet, { name: 'at' }, { runAt: new Date(Date.now() + 86_400_000) });
    expect((await readTask(t.db, later.id)).availableInMs).toBeGreaterThan(3_590_000);
    expect((await readTask(t.db, at.id)).availableInMs).toBeGreaterThan(86_000_000);
  });
});

describe('@leasehold/core/testing', () => {
  it('expectTaskEnqueued finds a pending task by payload subset, and says what is missing otherwise', async () => {
    const { expectTaskEnqueued } = await import('@leasehold/core/testing');
    const welcome = defineTask<{ to: string; locale: string }>('welcome', { handler: async () => {} });
    await t.db.transaction().execute(async (trx) => {
      const { id } = await enqueue(trx, welcome, { to: 'ada@example.com', locale: 'en' });
      const found = await expectTaskEnqueued(trx, welcome, { to: 'ada@example.com' });
      expect(found).toMatchObject({ id, payload: { to: 'ada@example.com', locale: 'en' } });
      await expect(expectTaskEnqueued(trx, welcome, { to: 'bob@example.com' })).rejects.toThrow(/found none/);
    });
  });
});
