// Enqueue from SQL (issue 34, item 3): <schema>.enqueue(name, payload, …) of core migration 14
// adds a task in the caller's transaction — from plain SQL, from a trigger, beside TypeScript
// producers — with enqueue()'s checks, dedup, ordering, limits and wake-up.
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createWorker,
  defineLimit,
  defineTask,
  enqueue,
  migrate,
  PayloadValidationError,
  type LimitDefinition,
  type TaskDefinition,
} from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { serverNow, waitUntil, wakeUntil } from '../wake-state.js';

const t = useTestDatabase();
const track = useWorkers();

/** Far past every deadline below: only a wake-up can start a task in time. */
const NEVER_POLL = '60s';
const DEADLINE_MS = 20_000;

/** What a refused call reports: PostgreSQL's error fields. */
interface SqlRefusal {
  readonly code: string;
  readonly column: string | undefined;
  readonly message: string;
}

async function refusal(attempt: Promise<unknown>): Promise<SqlRefusal> {
  const error = (await attempt.then(
    () => undefined,
    (e: unknown) => e,
  )) as (Error & { code?: string; column?: string }) | undefined;
  expect(error, 'the call was refused').toBeInstanceOf(Error);
  return { code: error!.code ?? '', column: error!.column, message: error!.message };
}

async function countTasks(where = sql`true`): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE ${where}`.execute(t.db);
  return Number(rows[0]!.n);
}

/** Enqueues through the SQL function; `args` are named arguments as SQL text with parameters $3…. */
async function sqlEnqueue(executor: pg.Pool | pg.Client, name: string, payload: unknown, args = '', values: unknown[] = []): Promise<string> {
  const { rows } = await executor.query<{ id: string }>(
    `SELECT leasehold.enqueue($1, $2::jsonb${args === '' ? '' : `, ${args}`})::text AS id`,
    [name, JSON.stringify(payload), ...values],
  );
  return rows[0]!.id;
}

interface Recording<P> {
  readonly task: TaskDefinition<P, unknown, boolean>;
  readonly runs: Array<{ id: string; payload: P }>;
}

/** A task (frozen by defineTask) and what its handler ran: each payload with the task's id. */
function recordingTask<P>(name: string, options: { ordered?: boolean; limit?: LimitDefinition } = {}): Recording<P> {
  const runs: Array<{ id: string; payload: P }> = [];
  const handler = (payload: P, ctx: { task: { id: string } }) => void runs.push({ id: ctx.task.id, payload });
  // the options' types are checked by defineTask at run time; P stays open here
  const task: TaskDefinition<P, unknown, boolean> = defineTask<P>(name, { ...options, handler } as never);
  return { task, runs };
}

describe('enqueue from plain SQL', () => {
  it('a worker runs the task with the payload as given; the defaults are enqueue()s', async () => {
    const mail = recordingTask<unknown>('sql.mail');
    const payload = { to: 'a@b', tags: ['x', 'ü', 3.5, null, true], nested: { deep: [{ n: -0.25 }] } };
    const id = await sqlEnqueue(t.pool, 'sql.mail', payload);
    const { rows } = await sql<Record<string, unknown>>`
      SELECT name, priority, max_attempts, version, status, blocked, scheduled, flow, group_key, dedup_key
      FROM leasehold.task WHERE id = ${id}::bigint`.execute(t.db);
    expect(rows).toEqual([
      { name: 'sql.mail', priority: 0, max_attempts: 12, version: 1, status: 'pending', blocked: false, scheduled: false, flow: null, group_key: null, dedup_key: null },
    ]);
    const worker = track(createWorker({ pool: t.pool, tasks: [mail.task] }));
    const done = nextEvent(worker, 'task:succeeded', (e) => e.task.id === id, DEADLINE_MS);
    await worker.start();
    await done;
    expect(mail.runs).toEqual([{ id, payload }]);
    await worker.stop();
  });

  it('the examples of the docs work as written: a bare call and run_at', async () => {
    const { rows } = await t.pool.query<{ a: string; b: string; later: boolean }>(`
      SELECT leasehold.enqueue('send-mail', '{"to":"a@b"}')::text AS a,
             leasehold.enqueue('x', '{}', run_at => now() + interval '5 minutes')::text AS b,
             (SELECT available_at FROM leasehold.task WHERE name = 'x' ORDER BY id DESC LIMIT 1) > now() + interval '4 minutes' AS later`);
    expect(rows[0]!.a).toMatch(/^\d+$/);
    expect(rows[0]!.b).toMatch(/^\d+$/);
    await sql`DELETE FROM leasehold.task WHERE name IN ('send-mail', 'x')`.execute(t.db);
  });

  it('each option stores what the same enqueue() option stores', async () => {
    const plain = defineTask<{ n: number }>('sql.same', { handler: () => undefined });
    const versioned = defineTask<{ n: number }>('sql.same-v3', { version: 3, handler: () => undefined });
    const runAt = new Date(Date.now() + 3_600_000);
    const pairs: Array<[() => Promise<unknown>, () => Promise<unknown>]> = [
      [() => enqueue(t.pool, plain, { n: 1 }), () => sqlEnqueue(t.pool, 'sql.same', { n: 1 })],
      [() => enqueue(t.pool, plain, { n: 2 }, { priority: -7, maxAttempts: 3 }), () => sqlEnqueue(t.pool, 'sql.same', { n: 2 }, 'priority => -7, max_attempts => 3')],
      [() => enqueue(t.pool, plain, { n: 3 }, { delay: '90s' }), () => sqlEnqueue(t.pool, 'sql.same', { n: 3 }, `delay => interval '90 seconds'`)],
      [() => enqueue(t.pool, plain, { n: 4 }, { runAt, delay: '1d' }), () => sqlEnqueue(t.pool, 'sql.same', { n: 4 }, `run_at => $3, delay => interval '1 day'`, [runAt])],
      [() => enqueue(t.pool, plain, { n: 5 }, { groupKey: 'g-ts' }), () => sqlEnqueue(t.pool, 'sql.same', { n: 5 }, `group_key => 'g-sql'`)],
      [() => enqueue(t.pool, plain, { n: 6 }, { dedupKey: 'd-ts' }), () => sqlEnqueue(t.pool, 'sql.same', { n: 6 }, `dedup_key => 'd-sql'`)],
      [() => enqueue(t.pool, versioned, { n: 7 }), () => sqlEnqueue(t.pool, 'sql.same-v3', { n: 7 }, 'version => 3')],
    ];
    const read = async () => {
      const { rows } = await sql<Record<string, unknown>>`
        SELECT name, payload, priority, group_key IS NOT NULL AS grouped, dedup_key IS NOT NULL AS dedup, max_attempts, blocked, scheduled, flow, flow_key,
               version, status, attempts,
               CASE WHEN available_at <= now() + interval '10 minutes' THEN round(extract(epoch FROM available_at - created_at)) END AS delay_s,
               CASE WHEN available_at > now() + interval '10 minutes' THEN available_at END AS run_at
        FROM leasehold.task WHERE name LIKE 'sql.same%' ORDER BY id DESC LIMIT 1`.execute(t.db);
      return rows[0];
    };
    for (const [viaTs, viaSql] of pairs) {
      await viaTs();
      const fromTs = await read();
      await viaSql();
      const fromSql = await read();
      expect(fromSql).toEqual(fromTs);
    }
    // the second of a group waits behind the first, whichever side added either
    await enqueue(t.pool, plain, { n: 8 }, { groupKey: 'g-sql' });
    await sqlEnqueue(t.pool, 'sql.same', { n: 9 }, `group_key => 'g-ts'`);
    expect(await countTasks(sql`group_key IN ('g-ts', 'g-sql') AND blocked`)).toBe(2);
  });

  it('a non-default schema has its own function, which enqueues into its own table', async () => {
    await migrate(t.pool, { schema: 'sql_jobs' });
    const echo = recordingTask<{ n: number }>('sql.schema');
    const before = await countTasks();
    const { rows } = await t.pool.query<{ id: string }>(`SELECT sql_jobs.enqueue('sql.schema', '{"n": 1}')::text AS id`);
    expect(await countTasks()).toBe(before);
    const worker = track(createWorker({ pool: t.pool, tasks: [echo.task], schema: 'sql_jobs' }));
    const done = nextEvent(worker, 'task:succeeded', (e) => e.task.id === rows[0]!.id, DEADLINE_MS);
    await worker.start();
    await done;
    expect(echo.runs).toEqual([{ id: rows[0]!.id, payload: { n: 1 } }]);
    await worker.stop();
  });

  it('runs as the caller, with search_path pinned: a role without the producer privileges cannot enqueue', async () => {
    const { rows } = await sql<{ proname: string; prosecdef: boolean; proconfig: string[] }>`
      SELECT p.proname, p.prosecdef, p.proconfig FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
      WHERE n.nspname = 'leasehold' AND p.proname IN ('enqueue', 'enqueue_check_key', 'enqueue_check_payload') ORDER BY 1`.execute(t.db);
    expect(rows).toEqual(['enqueue', 'enqueue_check_key', 'enqueue_check_payload'].map((proname) => ({ proname, prosecdef: false, proconfig: ['search_path=pg_catalog, pg_temp'] })));

    const role = `lh_sqlenq_${Math.random().toString(36).slice(2, 10)}`;
    const client = await t.client();
    await client.query(`CREATE ROLE ${role} NOLOGIN`);
    try {
      await client.query(`GRANT USAGE ON SCHEMA leasehold TO ${role}`);
      await client.query(`SET ROLE ${role}`);
      expect(await refusal(client.query(`SELECT leasehold.enqueue('sql.role', '{}')`))).toMatchObject({ code: '42501' });
      await client.query('RESET ROLE');
      // what a TypeScript producer needs, and the limits (docs/enqueue-from-sql.md)
      await client.query(`GRANT SELECT, INSERT ON leasehold.task TO ${role}; GRANT SELECT ON leasehold.task_limit, leasehold.task_wake TO ${role}`);
      await client.query(`SET ROLE ${role}`);
      await client.query(`SELECT leasehold.enqueue('sql.role', '{}')`);
      await client.query('RESET ROLE');
      expect(await countTasks(sql`name = 'sql.role'`)).toBe(1);
    } finally {
      await client.query('RESET ROLE');
      await client.query(`DROP OWNED BY ${role}`);
      await client.query(`DROP ROLE ${role}`);
    }
  });
});

describe('enqueue from a trigger', () => {
  afterAll(async () => {
    await sql`DROP TABLE IF EXISTS public.sql_signup; DROP FUNCTION IF EXISTS public.sql_signup_enqueue()`.execute(t.db);
  });

  it('commits with the application’s insert, rolls back with it, and a refusal fails the insert', async () => {
    await t.pool.query(`
      CREATE TABLE public.sql_signup (id bigserial PRIMARY KEY, email text NOT NULL);
      CREATE FUNCTION public.sql_signup_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM leasehold.enqueue('sql.welcome', jsonb_build_object('email', NEW.email), group_key => NEW.email);
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER sql_signup_enqueue AFTER INSERT ON public.sql_signup FOR EACH ROW EXECUTE FUNCTION public.sql_signup_enqueue();`);
    const welcome = recordingTask<{ email: string }>('sql.welcome');

    const app = await t.client();
    await app.query('BEGIN');
    await app.query(`INSERT INTO public.sql_signup (email) VALUES ('gone@example.com')`);
    expect(await countTasks(sql`name = 'sql.welcome'`)).toBe(0); // not visible before commit
    await app.query('ROLLBACK');
    expect(await countTasks(sql`name = 'sql.welcome'`)).toBe(0);
    expect(await countTasks(sql`group_key = 'gone@example.com'`)).toBe(0);

    // an empty group key is refused: the trigger fails the application's statement, nothing stays
    const refused = await refusal(app.query(`INSERT INTO public.sql_signup (email) VALUES ('')`));
    expect(refused).toMatchObject({ code: '22023', column: 'group_key' });
    const { rows: signups } = await app.query<{ n: string }>('SELECT count(*) AS n FROM public.sql_signup');
    expect(Number(signups[0]!.n)).toBe(0);

    await app.query('BEGIN');
    await app.query(`INSERT INTO public.sql_signup (email) VALUES ('a@example.com'), ('b@example.com')`);
    await app.query('COMMIT');
    expect(await countTasks(sql`name = 'sql.welcome'`)).toBe(2);

    const worker = track(createWorker({ pool: t.pool, tasks: [welcome.task] }));
    await worker.start();
    await waitUntil('both welcome tasks ran', async () => welcome.runs.length >= 2, DEADLINE_MS);
    expect(welcome.runs.map((r) => r.payload.email).sort()).toEqual(['a@example.com', 'b@example.com']);
    await worker.stop();
  });
});

describe('dedup, ordering and concurrency beside TypeScript producers', () => {
  it('a dedup key collides the same way from either side: the live task’s id comes back', async () => {
    const report = defineTask<{ from: string }>('sql.dedup', { handler: () => undefined });
    const fromTs = await enqueue(t.pool, report, { from: 'ts' }, { dedupKey: 'daily' });
    expect(await sqlEnqueue(t.pool, 'sql.dedup', { from: 'sql' }, `dedup_key => 'daily'`)).toBe(fromTs.id);
    const fromSql = await sqlEnqueue(t.pool, 'sql.dedup', { from: 'sql' }, `dedup_key => 'weekly'`);
    expect(await enqueue(t.pool, report, { from: 'ts' }, { dedupKey: 'weekly' })).toEqual({ id: fromSql, inserted: false });
    // the key belongs to the task name, as in enqueue()
    expect(await sqlEnqueue(t.pool, 'sql.dedup-other', {}, `dedup_key => 'daily'`)).not.toBe(fromTs.id);
    // a finished task frees its key
    await sql`UPDATE leasehold.task SET status = 'done', done_at = now() WHERE id = ${fromTs.id}::bigint`.execute(t.db);
    const again = await sqlEnqueue(t.pool, 'sql.dedup', { from: 'sql' }, `dedup_key => 'daily'`);
    expect(again).not.toBe(fromTs.id);
    expect(await countTasks(sql`name = 'sql.dedup' AND dedup_key = 'daily' AND status = 'pending'`)).toBe(1);
  });

  it('a SQL enqueue that waits for an uncommitted TypeScript enqueue of its key returns that task once it commits', async () => {
    const report = defineTask<{ from: string }>('sql.dedup-race', { handler: () => undefined });
    const holder = await t.client();
    await holder.query('BEGIN');
    const held = await enqueue(holder, report, { from: 'ts' }, { dedupKey: 'race' });
    const waiter = await t.client();
    const waiting = sqlEnqueue(waiter, 'sql.dedup-race', { from: 'sql' }, `dedup_key => 'race'`);
    await waitUntil('the SQL enqueue waits for the key', async () => {
      // read outside the holder's transaction, which would keep its first snapshot of the view
      const { rows } = await t.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%leasehold.enqueue%'`,
      );
      return Number(rows[0]!.n) > 0;
    });
    await holder.query('COMMIT');
    expect(await waiting).toBe(held.id);
    expect(await countTasks(sql`name = 'sql.dedup-race'`)).toBe(1);
  });

  it('4 TypeScript and 4 SQL producers racing on the same dedup keys all get one task per key', async () => {
    const report = defineTask<{ k: number }>('sql.dedup-many', { handler: () => undefined });
    const KEYS = 20;
    const sqlClients = await Promise.all([0, 1, 2, 3].map(() => t.client()));
    const producers = [
      ...[0, 1, 2, 3].map(async (p) => {
        const ids: string[] = [];
        for (let k = 0; k < KEYS; k++) ids.push((await enqueue(t.pool, report, { k }, { dedupKey: `k${(k + p) % KEYS}` })).id);
        return ids.map((id, k) => [`k${(k + p) % KEYS}`, id] as const);
      }),
      ...sqlClients.map(async (client, p) => {
        const ids: string[] = [];
        for (let k = 0; k < KEYS; k++) ids.push(await sqlEnqueue(client, 'sql.dedup-many', { k }, 'dedup_key => $3', [`k${(k + p + 2) % KEYS}`]));
        return ids.map((id, k) => [`k${(k + p + 2) % KEYS}`, id] as const);
      }),
    ];
    const byKey = new Map<string, Set<string>>();
    for (const answers of await Promise.all(producers)) {
      for (const [key, id] of answers) byKey.set(key, (byKey.get(key) ?? new Set()).add(id));
    }
    expect(byKey.size).toBe(KEYS);
    for (const ids of byKey.values()) expect(ids.size).toBe(1);
    expect(await countTasks(sql`name = 'sql.dedup-many'`)).toBe(KEYS);
  });

  it('4 TypeScript and 4 SQL producers beside running workers: every task runs exactly once', async () => {
    const N = 25;
    const mixed = recordingTask<{ p: string; i: number }>('sql.mixed');
    const workers = [0, 1].map(() => track(createWorker({ pool: t.pool, tasks: [mixed.task], concurrency: 4 })));
    await Promise.all(workers.map((w) => w.start()));
    const sqlClients = await Promise.all([0, 1, 2, 3].map(() => t.client()));
    await Promise.all([
      ...[0, 1, 2, 3].map(async (p) => {
        for (let i = 0; i < N; i++) await enqueue(t.pool, mixed.task, { p: `ts${p}`, i });
      }),
      ...sqlClients.map(async (client, p) => {
        for (let i = 0; i < N; i++) await sqlEnqueue(client, 'sql.mixed', { p: `sql${p}`, i });
      }),
    ]);
    await waitUntil('every task ran', async () => mixed.runs.length >= 8 * N, DEADLINE_MS);
    await Promise.all(workers.map((w) => w.stop()));
    const seen = mixed.runs.map((r) => `${r.payload.p}:${r.payload.i}`);
    expect(new Set(seen).size).toBe(8 * N);
    expect(seen).toHaveLength(8 * N);
    expect(await countTasks(sql`name = 'sql.mixed' AND status <> 'done'`)).toBe(0);
  });

  it('ordered tasks of one group from both sides wait behind one head and run in id (commit) order', async () => {
    const N = 10;
    const ordered = recordingTask<{ g: string; from: string; i: number; round: number }>('sql.ordered', { ordered: true });
    const groups = ['ga', 'gb', 'gc'];
    const sqlClients = await Promise.all([0, 1].map(() => t.client()));
    const produce = (round: number) =>
      Promise.all([
        ...[0, 1].map(async (p) => {
          for (let i = 0; i < N; i++) {
            const g = groups[(i + p) % groups.length]!;
            await enqueue(t.pool, ordered.task, { g, from: `ts${p}`, i, round }, { groupKey: g });
          }
        }),
        ...sqlClients.map(async (client, p) => {
          for (let i = 0; i < N; i++) {
            const g = groups[(i + p + 1) % groups.length]!;
            const payload = { g, from: `sql${p}`, i, round };
            // every other one in a transaction that goes on after the enqueue
            if (i % 2 === 0) await sqlEnqueue(client, 'sql.ordered', payload, 'group_key => $3', [g]);
            else {
              await client.query('BEGIN');
              await sqlEnqueue(client, 'sql.ordered', payload, 'group_key => $3', [g]);
              await client.query('SELECT 1');
              await client.query('COMMIT');
            }
          }
        }),
      ]);

    // before any worker: each group has one head, its lowest row, and every other row waits
    await produce(0);
    const { rows: heads } = await sql<{ group_key: string; unblocked: string; lowest: string; head: string }>`
      SELECT t.group_key, count(*) FILTER (WHERE NOT t.blocked) AS unblocked, min(t.id)::text AS lowest,
             (SELECT g.head_id::text FROM leasehold.task_group AS g WHERE g.group_key = t.group_key) AS head
      FROM leasehold.task AS t WHERE t.name = 'sql.ordered' GROUP BY t.group_key ORDER BY t.group_key`.execute(t.db);
    expect(heads.map((h) => ({ ...h, unblocked: Number(h.unblocked) }))).toEqual(
      groups.map((group_key) => ({ group_key, unblocked: 1, lowest: expect.any(String) as unknown, head: heads.find((h) => h.group_key === group_key)?.lowest })),
    );
    const { rows: unblockedIds } = await sql<{ id: string }>`SELECT id::text FROM leasehold.task WHERE name = 'sql.ordered' AND NOT blocked ORDER BY id`.execute(t.db);
    expect(unblockedIds.map((r) => r.id)).toEqual(heads.map((h) => h.lowest).sort((x, y) => Number(x) - Number(y)));

    // then with workers running while both sides add more
    const workers = [0, 1].map(() => track(createWorker({ pool: t.pool, tasks: [ordered.task], concurrency: 4, pollInterval: '200ms' })));
    await Promise.all(workers.map((w) => w.start()));
    await produce(1);
    await waitUntil('every ordered task ran', async () => ordered.runs.length >= 8 * N, DEADLINE_MS);
    await Promise.all(workers.map((w) => w.stop()));
    expect(ordered.runs).toHaveLength(8 * N);
    for (const g of groups) {
      const ids = ordered.runs.filter((r) => r.payload.g === g).map((r) => BigInt(r.id));
      expect(ids, `group ${g} ran in id order`).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    expect(await countTasks(sql`name = 'sql.ordered' AND status <> 'done'`)).toBe(0);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task_group WHERE group_key = ANY(${groups})`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('a task under a limit runs under the limit its workers recorded, counted under limit_key', async () => {
    const tenant = defineLimit('sql-tenant', { concurrencyPerKey: 1 });
    const api = defineLimit('sql-api', { concurrency: 2 });
    const keyed = recordingTask<{ n: number }>('sql.keyed', { limit: tenant });
    const plain = recordingTask<{ n: number }>('sql.limited', { limit: api });
    // workers record their limits when they start
    const worker = track(createWorker({ pool: t.pool, tasks: [keyed.task, plain.task] }));
    await worker.start();
    expect(await refusal(sqlEnqueue(t.pool, 'sql.keyed', { n: 0 }))).toMatchObject({ code: '22023', column: 'limit_key' });
    expect(await refusal(sqlEnqueue(t.pool, 'sql.limited', { n: 0 }, `limit_key => 'acme'`))).toMatchObject({ code: '22023', column: 'limit_key' });
    expect(await countTasks(sql`name IN ('sql.keyed', 'sql.limited')`)).toBe(0);
    const a = await sqlEnqueue(t.pool, 'sql.keyed', { n: 1 }, `limit_key => 'acme'`);
    const b = (await enqueue(t.pool, keyed.task, { n: 2 }, { limitKey: 'acme' })).id;
    const c = await sqlEnqueue(t.pool, 'sql.limited', { n: 3 });
    const d = (await enqueue(t.pool, plain.task, { n: 4 })).id;
    const { rows } = await sql<{ id: string; flow: string; flow_key: string }>`
      SELECT id::text, flow, flow_key FROM leasehold.task WHERE id = ANY(${[a, b, c, d]}::bigint[]) ORDER BY id`.execute(t.db);
    expect(rows).toEqual([
      { id: a, flow: 'sql-tenant', flow_key: 'acme' },
      { id: b, flow: 'sql-tenant', flow_key: 'acme' },
      { id: c, flow: 'sql-api', flow_key: '' },
      { id: d, flow: 'sql-api', flow_key: '' },
    ]);
    await waitUntil('the limited tasks ran', async () => keyed.runs.length + plain.runs.length >= 4, DEADLINE_MS);
    await worker.stop();
  });
});

describe('wake-up', () => {
  it('an idle worker polling once a minute starts a SQL-enqueued task at once, plain or ordered', async () => {
    const ping = recordingTask<{ n: number }>('sql.ping');
    const worker = track(createWorker({ pool: t.pool, tasks: [ping.task], pollInterval: NEVER_POLL }));
    await worker.start();
    for (const [n, args] of [[1, ''], [2, `group_key => 'wake'`], [3, `dedup_key => 'wake'`]] as const) {
      await waitUntil('the idle worker announces it may sleep', async () => (await wakeUntil(t.db)) > (await serverNow(t.db)));
      const ran = nextEvent(worker, 'task:succeeded', (e) => (e.task.payload as { n: number }).n === n, DEADLINE_MS);
      await sqlEnqueue(t.pool, 'sql.ping', { n }, args);
      await ran;
    }
    expect(ping.runs.map((r) => r.payload.n)).toEqual([1, 2, 3]);
    await worker.stop();
  });
});

describe('bad input: SQLSTATE 22023 naming the argument, and nothing stored', () => {
  const cases: Array<[string, string, unknown[], string, RegExp]> = [
    ['a NULL name', `NULL, '{}'`, [], 'name', /`name` to be a task name of 1 to 200 bytes, got NULL/],
    ['an empty name', `'', '{}'`, [], 'name', /got 0 bytes/],
    ['a name over 200 bytes', `$1, '{}'`, ['é'.repeat(101)], 'name', /got 202 bytes/],
    ['a NULL payload', `'sql.bad', NULL`, [], 'payload', /`payload` to be JSON, got NULL/],
    ['a payload nested 257 deep', `'sql.bad', $1::jsonb`, ['['.repeat(257) + ']'.repeat(257)], 'payload', /nested deeper than 256 levels/],
    ['a NULL priority', `'sql.bad', '{}', priority => NULL`, [], 'priority', /`priority` to be an integer, got NULL/],
    ['an empty group key', `'sql.bad', '{}', group_key => ''`, [], 'group_key', /`group_key` to be a key of 1 to 1024 bytes/],
    ['a dedup key over 1024 bytes', `'sql.bad', '{}', dedup_key => $1`, ['k'.repeat(1025)], 'dedup_key', /got 1025 bytes/],
    ['max_attempts 0', `'sql.bad', '{}', max_attempts => 0`, [], 'max_attempts', /between 1 and 1000000, got 0/],
    ['max_attempts 1000001', `'sql.bad', '{}', max_attempts => 1000001`, [], 'max_attempts', /got 1000001/],
    ['an infinite run_at', `'sql.bad', '{}', run_at => 'infinity'`, [], 'run_at', /`run_at` to be a finite time/],
    ['a negative delay', `'sql.bad', '{}', delay => interval '-1 second'`, [], 'delay', /`delay` to be from 0 to 36500 days/],
    ['a delay over 100 years', `'sql.bad', '{}', delay => interval '36501 days'`, [], 'delay', /from 0 to 36500 days/],
    ['version 0', `'sql.bad', '{}', version => 0`, [], 'version', /`version` to be an integer >= 1, got 0/],
    ['a limit_key for a task under no limit', `'sql.bad', '{}', limit_key => 'acme'`, [], 'limit_key', /runs under no limit/],
  ];
  it.each(cases)('%s', async (_label, args, values, column, message) => {
    const before = await countTasks();
    const error = await refusal(t.pool.query(`SELECT leasehold.enqueue(${args})`, values));
    expect(error).toMatchObject({ code: '22023', column });
    expect(error.message).toMatch(/^enqueue: expected |^enqueue: task /);
    expect(error.message).toMatch(message);
    expect(await countTasks()).toBe(before);
  });

  it('a refusal inside the application’s transaction leaves nothing of it', async () => {
    const client = await t.client();
    await client.query('BEGIN');
    await sqlEnqueue(client, 'sql.bad', { first: true });
    expect(await refusal(sqlEnqueue(client, 'sql.bad', {}, 'max_attempts => 0'))).toMatchObject({ code: '22023' });
    await client.query('ROLLBACK');
    expect(await countTasks(sql`name = 'sql.bad'`)).toBe(0);
  });

  it('the bounds are enqueue()s: the last value either side accepts, and the first it refuses', async () => {
    const task = defineTask<unknown>('sql.bounds', { handler: () => undefined });
    const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)]);
    await enqueue(t.pool, task, deep(256));
    await sqlEnqueue(t.pool, 'sql.bounds', deep(256));
    await expect(enqueue(t.pool, task, deep(257))).rejects.toBeInstanceOf(PayloadValidationError);
    await enqueue(t.pool, task, {}, { maxAttempts: 1_000_000, dedupKey: 'k'.repeat(1024) });
    await sqlEnqueue(t.pool, 'sql.bounds', {}, `max_attempts => 1000000, dedup_key => $3`, ['q'.repeat(1024)]);
    await expect(enqueue(t.pool, task, {}, { maxAttempts: 1_000_001 })).rejects.toBeInstanceOf(ConfigError);
    await expect(enqueue(t.pool, task, {}, { dedupKey: 'k'.repeat(1025) })).rejects.toBeInstanceOf(ConfigError);
    expect(await countTasks(sql`name = 'sql.bounds'`)).toBe(4);
  });
});
