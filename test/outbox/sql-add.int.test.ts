// Add to the outbox from SQL (issue 34, item 3): <schema>.outbox_add(…) of outbox migration 5
// records an event in the caller's transaction — from plain SQL, from a trigger, beside
// TypeScript producers — with add()'s checks, aggregate ordering and wake-up.
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createDispatcher, createOutbox, migrate, type Dispatcher, type OutboxMessage, type Publisher } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { readMessages, resetOutbox, waitUntil } from './helpers.js';

const t = useTestDatabase();
const track = useWorkers();
const outbox = createOutbox({ orderedEventTypes: ['OrderCreated', 'OrderPaid'] });
const DEADLINE_MS = 20_000;

function dispatcher(publisher: Publisher, options: Partial<Parameters<typeof createDispatcher>[0]> = {}): Dispatcher {
  // ordered messages become claimable when their predecessor's done is written: a short poll
  return track(createDispatcher({ pool: t.pool, publisher, pollInterval: 100, ...options }));
}

/** Records what is published, per aggregate key in order, and any message published while another of its aggregate was. */
function serialChecker(): Publisher & { seen: OutboxMessage[]; order(key: string): string[]; overlaps: string[] } {
  const seen: OutboxMessage[] = [];
  const order = new Map<string, string[]>();
  const inFlight = new Set<string>();
  const overlaps: string[] = [];
  return {
    seen,
    overlaps,
    order: (key) => order.get(key) ?? [],
    async publish(m) {
      seen.push(m);
      if (inFlight.has(m.key)) overlaps.push(m.id);
      inFlight.add(m.key);
      // stay in flight across a few turns of the event loop, so overlaps would show
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      order.set(m.key, [...(order.get(m.key) ?? []), m.id]);
      inFlight.delete(m.key);
    },
  };
}

/** outbox_add through a pool or a client; `args` are further arguments as SQL text with parameters $5…. */
async function sqlAdd(executor: pg.Pool | pg.Client, aggregateId: string, eventType: string, payload: unknown, args = '', values: unknown[] = []): Promise<string> {
  const { rows } = await executor.query<{ id: string }>(
    `SELECT leasehold.outbox_add('order', $1, $2, $3::jsonb${args === '' ? '' : `, ${args}`})::text AS id`,
    [aggregateId, eventType, JSON.stringify(payload), ...values],
  );
  return rows[0]!.id;
}

async function countMessages(): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.outbox`.execute(t.db);
  return Number(rows[0]!.n);
}

describe('outbox_add from SQL', () => {
  it('stores what add() stores, and the dispatcher publishes it as given', async () => {
    await resetOutbox(t.db);
    await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 'A', eventType: 'OrderPaid', payload: { n: 1 }, headers: { 'x-tenant': 't1' }, maxAttempts: 3 });
    await sqlAdd(t.pool, 'B', 'OrderPaid', { n: 1 }, `headers => '{"x-tenant": "t1"}', ordered => true, max_attempts => 3`);
    await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 'A', eventType: 'Viewed', payload: [1, 'ü', null] });
    await sqlAdd(t.pool, 'B', 'Viewed', [1, 'ü', null]);
    const { rows } = await sql<Record<string, unknown>>`
      SELECT aggregate_id, event_type, payload, headers, group_key, max_attempts, blocked, status, attempts
      FROM leasehold.outbox ORDER BY aggregate_id, id`.execute(t.db);
    const [a1, a2, b1, b2] = rows;
    expect(b1).toEqual({ ...a1, aggregate_id: 'B', group_key: 'order:B' });
    expect(b2).toEqual({ ...a2, aggregate_id: 'B' });
    expect(b1).toMatchObject({ headers: { 'x-tenant': 't1' }, group_key: 'order:B', max_attempts: 3, blocked: false });
    expect(b2).toMatchObject({ headers: {}, group_key: null, max_attempts: 12 });

    const publisher = serialChecker();
    const d = dispatcher(publisher);
    await d.start();
    await waitUntil(() => publisher.seen.length >= 4, 'four deliveries', DEADLINE_MS);
    await d.stop();
    const fromSql = publisher.seen.filter((m) => m.key === 'B').sort((x, y) => Number(x.id) - Number(y.id));
    expect(fromSql.map((m) => ({ type: m.aggregateType, event: m.eventType, payload: m.payload, headers: m.headers }))).toEqual([
      { type: 'order', event: 'OrderPaid', payload: { n: 1 }, headers: { 'x-tenant': 't1' } },
      { type: 'order', event: 'Viewed', payload: [1, 'ü', null], headers: {} },
    ]);
  });

  it('from a trigger: commits and rolls back with the application’s write', async () => {
    await resetOutbox(t.db);
    await t.pool.query(`
      CREATE TABLE public.sql_order (id text PRIMARY KEY, total int NOT NULL);
      CREATE FUNCTION public.sql_order_created() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM leasehold.outbox_add('order', NEW.id, 'OrderCreated', jsonb_build_object('total', NEW.total), ordered => true);
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER sql_order_created AFTER INSERT ON public.sql_order FOR EACH ROW EXECUTE FUNCTION public.sql_order_created();`);
    const app = await t.client();
    await app.query('BEGIN');
    await app.query(`INSERT INTO public.sql_order VALUES ('o-1', 10)`);
    await app.query('ROLLBACK');
    expect(await countMessages()).toBe(0);
    await app.query('BEGIN');
    await app.query(`INSERT INTO public.sql_order VALUES ('o-2', 20)`);
    await app.query('COMMIT');
    expect((await readMessages(t.db)).map((m) => m.groupKey)).toEqual(['order:o-2']);
  });

  afterAll(async () => {
    await sql`DROP TABLE IF EXISTS public.sql_order; DROP FUNCTION IF EXISTS public.sql_order_created()`.execute(t.db);
  });

  it('a non-default schema has its own outbox_add, writing its own table', async () => {
    await resetOutbox(t.db);
    await migrate(t.pool, { schema: 'sql_box' });
    await t.pool.query(`SELECT sql_box.outbox_add('order', '1', 'OrderPaid', '{}', ordered => true)`);
    expect(await countMessages()).toBe(0);
    const { rows } = await t.pool.query<{ group_key: string }>('SELECT group_key FROM sql_box.outbox');
    expect(rows).toEqual([{ group_key: 'order:1' }]);
  });
});

describe('beside TypeScript producers', () => {
  it('ordered events of one aggregate from both sides are dispatched in id (commit) order, each once', async () => {
    await resetOutbox(t.db);
    const N = 12;
    const aggregates = ['X', 'Y'];
    const sqlClients = await Promise.all([0, 1].map(() => t.client()));
    const produce = (round: number) =>
      Promise.all([
        ...[0, 1].map(async (p) => {
          for (let i = 0; i < N; i++) {
            const aggregateId = aggregates[(i + p) % 2]!;
            await outbox.add(t.pool, { aggregateType: 'order', aggregateId, eventType: 'OrderPaid', payload: { from: `ts${p}`, i, round } });
          }
        }),
        ...sqlClients.map(async (client, p) => {
          for (let i = 0; i < N; i++) {
            const aggregateId = aggregates[(i + p + 1) % 2]!;
            await client.query('BEGIN');
            await sqlAdd(client, aggregateId, 'OrderPaid', { from: `sql${p}`, i, round }, 'ordered => true');
            await client.query('COMMIT');
          }
        }),
      ]);
    await produce(0);
    // before any dispatcher: one head per aggregate, its lowest row
    const { rows } = await sql<{ group_key: string; unblocked: string }>`
      SELECT group_key, count(*) FILTER (WHERE NOT blocked) AS unblocked FROM leasehold.outbox GROUP BY 1 ORDER BY 1`.execute(t.db);
    expect(rows.map((r) => [r.group_key, Number(r.unblocked)])).toEqual([['order:X', 1], ['order:Y', 1]]);

    const publisher = serialChecker();
    const ds = [0, 1].map(() => dispatcher(publisher, { concurrency: 4 }));
    await Promise.all(ds.map((d) => d.start()));
    await produce(1);
    await waitUntil(() => publisher.seen.length >= 8 * N, 'every event published', DEADLINE_MS);
    await Promise.all(ds.map((d) => d.stop()));
    expect(publisher.overlaps).toEqual([]);
    expect(new Set(publisher.seen.map((m) => m.id)).size).toBe(8 * N);
    for (const key of aggregates) {
      const ids = publisher.order(key);
      expect(ids, `aggregate ${key} in id order`).toEqual([...ids].sort((a, b) => Number(a) - Number(b)));
      const sources = new Set(publisher.seen.filter((m) => m.key === key).map((m) => (m.payload as { from: string }).from.slice(0, 2)));
      expect(sources).toEqual(new Set(['ts', 'sq']));
    }
  });

  it('an idle dispatcher polling once a minute publishes an event added from SQL at once', async () => {
    await resetOutbox(t.db);
    const publisher = serialChecker();
    const d = dispatcher(publisher, { pollInterval: '60s' });
    await d.start();
    const announced = async () => {
      const { rows } = await sql<{ live: boolean }>`
        SELECT coalesce(pg_sequence_last_value('leasehold.outbox_wake'), 0) > date_part('epoch', clock_timestamp()) * 1000 AS live`.execute(t.db);
      return rows[0]!.live;
    };
    for (const [n, args] of [[1, ''], [2, 'ordered => true']] as const) {
      await waitUntil(announced, 'the idle dispatcher announces it may sleep', DEADLINE_MS);
      const published = nextEvent(d, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === n, DEADLINE_MS);
      await sqlAdd(t.pool, 'W', 'Woken', { n }, args);
      await published;
    }
    await d.stop();
  });
});

describe('bad input: SQLSTATE 22023 naming the argument, and nothing stored', () => {
  const cases: Array<[string, string, unknown[], string, RegExp]> = [
    ['a NULL aggregate type', `NULL, '1', 'E', '{}'`, [], 'aggregate_type', /`aggregate_type` to be a name of 1 to 200 bytes, got NULL/],
    ['an aggregate type with a colon', `'a:b', '1', 'E', '{}'`, [], 'aggregate_type', /not to contain ':'/],
    ['an empty aggregate id', `'order', '', 'E', '{}'`, [], 'aggregate_id', /`aggregate_id` to be a key of 1 to 1024 bytes, got 0 bytes/],
    ['a NULL aggregate id', `'order', NULL, 'E', '{}'`, [], 'aggregate_id', /got NULL/],
    ['an event type over 200 bytes', `'order', '1', $1, '{}'`, ['e'.repeat(201)], 'event_type', /got 201 bytes/],
    ['a NULL payload', `'order', '1', 'E', NULL`, [], 'payload', /`payload` to be JSON, got NULL/],
    ['a payload nested 257 deep', `'order', '1', 'E', $1::jsonb`, ['['.repeat(257) + ']'.repeat(257)], 'payload', /nested deeper than 256 levels/],
    ['headers that are an array', `'order', '1', 'E', '{}', headers => '[]'`, [], 'headers', /`headers` to be a JSON object of strings, got array/],
    ['a header that is a number', `'order', '1', 'E', '{}', headers => '{"x-n": 1}'`, [], 'headers', /`headers.x-n` to be a string, got number/],
    ['a header value over 8192 bytes', `'order', '1', 'E', '{}', headers => jsonb_build_object('x', repeat('v', 8193))`, [], 'headers', /at most 8192 bytes/],
    ['101 headers', `'order', '1', 'E', '{}', headers => (SELECT jsonb_object_agg('h' || i, 'v') FROM generate_series(1, 101) AS i)`, [], 'headers', /at most 100 headers, got 101/],
    ['max_attempts 0', `'order', '1', 'E', '{}', max_attempts => 0`, [], 'max_attempts', /between 1 and 1000000, got 0/],
    ['a NULL ordered', `'order', '1', 'E', '{}', ordered => NULL`, [], 'ordered', /`ordered` to be true or false/],
  ];
  it.each(cases)('%s', async (_label, args, values, column, message) => {
    await resetOutbox(t.db);
    const error = (await t.pool.query(`SELECT leasehold.outbox_add(${args})`, values).then(
      () => undefined,
      (e: unknown) => e,
    )) as (Error & { code?: string; column?: string }) | undefined;
    expect(error).toBeInstanceOf(Error);
    expect({ code: error!.code, column: error!.column }).toEqual({ code: '22023', column });
    expect(error!.message).toMatch(/^outbox_add: expected /);
    expect(error!.message).toMatch(message);
    expect(await countMessages()).toBe(0);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.outbox_group`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(0);
  });
});
