import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  createWorker,
  defineSignal,
  defineTask,
  enqueue,
  getTask,
  listTasks,
  sendSignal,
  waitForResult,
  type TaskContext,
  type TaskListFilter,
  type TaskStatus,
} from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();

interface Row {
  id: string;
  name: string;
  status: TaskStatus;
  parentId: string | null;
  createdAt: Date;
}

const STATUSES: TaskStatus[] = ['pending', 'processing', 'waiting', 'done', 'dead', 'cancelled'];
const BASE = Date.parse('2026-01-01T00:00:00Z');

/** Inserts `count` rows in schema `schema`, one a minute from BASE, names and statuses cycling; every 5th a child of `parent`. */
async function insertRows(schema: string, count: number, parent: string | null, offset = 0): Promise<Row[]> {
  const { rows } = await t.pool.query<{ id: string; name: string; status: TaskStatus; parent_id: string | null; created_at: Date }>(
    `INSERT INTO ${schema}.task (name, status, parent_id, created_at)
     SELECT 'n' || (g % 3), ($1::text[])[1 + (g * 7 % 6)], CASE WHEN g % 5 = 0 THEN $2::bigint END,
            $3::timestamptz + make_interval(mins => g + $4::int)
     FROM generate_series(1, $5::int) AS g ORDER BY g
     RETURNING id, name, status, parent_id, created_at`,
    [STATUSES, parent, new Date(BASE).toISOString(), offset, count],
  );
  return rows.map((r) => ({ id: String(r.id), name: r.name, status: r.status, parentId: r.parent_id === null ? null : String(r.parent_id), createdAt: r.created_at }));
}

async function walk(filter: TaskListFilter, limit: number, schema?: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await listTasks(t.pool, filter, { limit, after, schema });
    expect(page.tasks.length).toBeLessThanOrEqual(limit);
    ids.push(...page.tasks.map((task) => task.id));
    if (page.next === null) return ids;
    expect(page.tasks).toHaveLength(limit);
    after = page.next;
  }
  throw new Error('too many pages');
}

const newestFirst = (rows: Row[]) => rows.map((r) => r.id).sort((a, b) => Number(BigInt(b) - BigInt(a)));

describe('listTasks', () => {
  it('filters by name, status, parent and creation time, each and combined, newest first', async () => {
    const schema = 'lt_filters';
    await import('@leasehold/core').then(({ migrate }) => migrate(t.pool, { schema }));
    const [parent] = await insertRows(schema, 1, null, -10);
    const rows = [parent!, ...(await insertRows(schema, 120, parent!.id))];
    const at = (minute: number) => new Date(BASE + minute * 60_000);
    const cases: [TaskListFilter, (r: Row) => boolean][] = [
      [{}, () => true],
      [{ name: 'n1' }, (r) => r.name === 'n1'],
      [{ name: ['n0', 'n2'] }, (r) => r.name === 'n0' || r.name === 'n2'],
      [{ name: 'nobody' }, () => false],
      [{ status: 'dead' }, (r) => r.status === 'dead'],
      [{ status: ['waiting', 'pending'] }, (r) => r.status === 'waiting' || r.status === 'pending'],
      [{ parent: parent!.id }, (r) => r.parentId === parent!.id],
      [{ createdAfter: at(30) }, (r) => r.createdAt >= at(30)],
      [{ createdBefore: at(30) }, (r) => r.createdAt < at(30)],
      [{ createdAfter: at(30), createdBefore: at(90) }, (r) => r.createdAt >= at(30) && r.createdAt < at(90)],
      [{ createdAfter: at(90), createdBefore: at(30) }, () => false],
      [{ createdAfter: at(1000) }, () => false],
      [{ name: 'n1', status: ['done', 'dead'] }, (r) => r.name === 'n1' && (r.status === 'done' || r.status === 'dead')],
      [{ name: 'n2', status: 'pending', createdAfter: at(20) }, (r) => r.name === 'n2' && r.status === 'pending' && r.createdAt >= at(20)],
      [{ parent: parent!.id, status: 'done', name: ['n0', 'n1'] }, (r) => r.parentId === parent!.id && r.status === 'done' && r.name !== 'n2'],
      [{ parent: parent!.id, createdBefore: at(60) }, (r) => r.parentId === parent!.id && r.createdAt < at(60)],
      [{ status: 'cancelled', createdAfter: at(10), createdBefore: at(100) }, (r) => r.status === 'cancelled' && r.createdAt >= at(10) && r.createdAt < at(100)],
    ];
    for (const [filter, keep] of cases) {
      const expected = newestFirst(rows.filter(keep));
      expect({ filter, ids: await walk(filter, 7, schema) }).toEqual({ filter, ids: expected });
      expect({ filter, ids: await walk(filter, 1000, schema) }).toEqual({ filter, ids: expected });
    }
    const [first] = (await listTasks(t.pool, { name: 'n1', status: 'dead' }, { schema, limit: 1 })).tasks;
    const row = rows.find((r) => r.id === first!.id)!;
    expect(first).toMatchObject({ name: 'n1', status: 'dead', parentId: row.parentId, createdAt: row.createdAt, attempts: 0, maxAttempts: 12, version: 1, lastError: null });
  });

  it('walks every row exactly once, in order, while tasks are enqueued between pages', async () => {
    await insertRows('leasehold', 150, null);
    const job = defineTask('list-walk', { handler: () => undefined });
    for (const filter of [{}, { name: 'n1' }, { status: ['pending', 'done'] as TaskStatus[] }]) {
      const { rows: existing } = await t.pool.query<Row>('SELECT id::text, name, status FROM leasehold.task');
      const seen: string[] = [];
      let after: string | null = null;
      do {
        const page = await listTasks(t.pool, filter, { limit: 4, after });
        seen.push(...page.tasks.map((task) => task.id));
        after = page.next;
        await enqueue(t.pool, job, {}); // newer than the walk: never on its pages
      } while (after !== null);
      const keep = (r: Row) => ('name' in filter ? r.name === filter.name : 'status' in filter ? filter.status!.includes(r.status) : true);
      expect(seen).toEqual(newestFirst(existing.filter(keep)));
    }
  });

  it('refuses unknown keys, bad filters, limits and cursors with a ConfigError naming them', async () => {
    const refused = async (filter: unknown, options: unknown, option: string) => {
      await expect(listTasks(t.pool, filter as TaskListFilter, options as object)).rejects.toMatchObject({ code: 'CONFIG', option });
    };
    await refused({ nmae: 'x' }, {}, 'nmae');
    await refused({}, { limti: 5 }, 'limti');
    await refused({ status: 'finished' }, {}, 'status');
    await refused({ status: [] }, {}, 'status');
    await refused({ name: '' }, {}, 'name');
    await refused({ name: Array.from({ length: 101 }, (_, i) => `n${i}`) }, {}, 'name');
    await refused({ parent: 'abc' }, {}, 'parent');
    await refused({ createdAfter: '2026-01-01' }, {}, 'createdAfter');
    await refused({ createdBefore: new Date(Number.NaN) }, {}, 'createdBefore');
    for (const limit of [0, 1001, 2.5, '10']) await refused({}, { limit }, 'limit');
    for (const after of ['', '12', 'tabc', 't0', 't99999999999999999999', 't9223372036854775808', 5]) await refused({}, { after }, 'after');
    await expect(listTasks(t.pool, {}, { after: 't9223372036854775807', limit: 1000 })).resolves.toMatchObject({ next: null });
  });

  it('reads each page through an index at a few thousand rows, never a scan of the table', async () => {
    const schema = 'lt_plans';
    await import('@leasehold/core').then(({ migrate }) => migrate(t.pool, { schema }));
    await t.pool.query(
      `INSERT INTO ${schema}.task (name, status, parent_id, created_at)
       SELECT 'p' || (g % 7), ($1::text[])[1 + (g % 6)], CASE WHEN g % 9 = 0 THEN 100 END, now() - make_interval(secs => 5000 - g)
       FROM generate_series(1, 5000) AS g`,
      [STATUSES],
    );
    await t.pool.query(`ANALYZE ${schema}.task`);
    const statements: { text: string; values: unknown[] }[] = [];
    const recording = {
      query: (config: string | { text: string; values: unknown[] }, values?: unknown[]) => {
        const text = typeof config === 'string' ? config : config.text;
        const args = typeof config === 'string' ? (values ?? []) : config.values;
        statements.push({ text, values: args });
        return t.pool.query(text, args);
      },
    };
    const hour = new Date(Date.now() - 3_600_000);
    const filters: TaskListFilter[] = [
      {},
      { name: 'p3' },
      { status: 'done' },
      { status: ['dead', 'waiting'] },
      { status: 'processing', name: 'p2' },
      { name: ['p1', 'p2'], status: 'pending' },
      { parent: '100' },
      { parent: '100', status: 'done' },
      { createdAfter: hour, name: 'p4' },
      { createdAfter: hour, createdBefore: new Date(Date.now() - 600_000), status: 'cancelled' },
    ];
    for (const filter of filters) {
      for (const after of [undefined, 't2500']) {
        statements.length = 0;
        const page = await listTasks(recording, filter, { schema, limit: 20, after });
        expect({ filter, rows: page.tasks.length > 0 }).toEqual({ filter, rows: true });
        for (const { text, values } of statements) {
          const { rows } = await t.pool.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
          const scans = [...JSON.stringify(rows[0]!['QUERY PLAN']).matchAll(/"Node Type":"([^"]+)"[^{}]*?"Relation Name":"task"/g)].map((m) => m[1]);
          expect({ filter, after, scans }).toEqual({ filter, after, scans: expect.not.arrayContaining(['Seq Scan']) });
          expect(scans.length).toBeGreaterThan(0);
        }
      }
    }
  });
});

describe('getTask timeline', () => {
  it('lists steps, a sleep, signals taken and pending, and children with their statuses, in time order', async () => {
    const go = defineSignal<{ by: string }>('go');
    const leaf = defineTask('timeline-leaf', { handler: (p: { n: number }) => p.n });
    const flow = defineTask('timeline-flow', {
      handler: async (_p: object, ctx: TaskContext) => {
        await ctx.step('first', () => 1);
        await ctx.sleep('nap', '200ms');
        const signal = await ctx.waitForSignal(go, { timeout: '1h' });
        const kids = await ctx.spawn('kids', leaf, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
        const results = await ctx.waitForChildren(kids);
        return { by: signal.timedOut ? null : signal.payload.by, results };
      },
    });
    const handle = await enqueue(t.pool, flow, {});
    const worker = track(createWorker({ pool: t.pool, tasks: [flow, leaf], concurrency: 2, pollInterval: 20 }));
    const waiting = nextEvent(worker, 'task:suspended', ({ task }) => task.id === handle.id);
    await worker.start();
    await waiting; // the sleep
    await nextEvent(worker, 'task:suspended', ({ task }) => task.id === handle.id); // the signal wait
    const mid = (await getTask(t.pool, handle))!;
    expect(mid.timeline.map((e) => [e.type, 'name' in e ? e.name : '', e.type === 'step' ? e.done : null])).toEqual([
      ['step', 'first', true],
      ['step', 'nap', true],
      ['step', 'signal:go', false],
    ]);
    await sendSignal(t.pool, handle, go, { by: 'ann' });
    await sendSignal(t.pool, handle, defineSignal('unheard'), {}); // never waited for: stays pending
    expect(await waitForResult(t.pool, handle, { timeout: '20s' })).toEqual({ by: 'ann', results: [1, 2] });
    await worker.stop();

    const info = (await getTask(t.pool, handle))!;
    const { timeline } = info;
    for (let i = 1; i < timeline.length; i++) expect(timeline[i]!.at.getTime()).toBeGreaterThanOrEqual(timeline[i - 1]!.at.getTime());
    const steps = timeline.filter((e) => e.type === 'step');
    expect(steps.map((s) => [s.name, s.kind, s.position, s.done])).toEqual([
      ['first', 'step', 0, true],
      ['nap', 'sleep', 1, true],
      ['signal:go', 'signal', 2, true],
      ['kids', 'spawn', 3, true],
    ]);
    const [first, nap, wait, spawn] = steps;
    expect(first!.durationMs).toBeNull(); // recorded once, when it ended: its start is not recorded
    expect(first!.doneAt).toEqual(first!.at);
    expect(nap!.wakeAt!.getTime() - nap!.at.getTime()).toBeGreaterThanOrEqual(150);
    expect(nap!.durationMs).toBe(nap!.doneAt!.getTime() - nap!.at.getTime());
    expect(nap!.durationMs!).toBeGreaterThanOrEqual(150);
    expect(wait!.durationMs).toBe(wait!.doneAt!.getTime() - wait!.at.getTime());
    expect(wait!.wakeAt).not.toBeNull(); // the wait's deadline
    expect(spawn!.durationMs).toBeNull();
    // the run parked twice and resumed each time on a new claim
    expect(first!.leaseVersion).toBeLessThan(nap!.leaseVersion);
    expect(nap!.leaseVersion).toBeLessThan(spawn!.leaseVersion);

    const signals = timeline.filter((e) => e.type === 'signal');
    expect(signals.map((s) => [s.name, s.consumedAt === null])).toEqual([
      ['go', false],
      ['unheard', true],
    ]);
    expect(info.signals.map((s) => s.name)).toEqual(['go', 'unheard']);
    const children = timeline.filter((e) => e.type === 'child');
    expect(children.map((c) => [c.name, c.status, c.doneAt !== null])).toEqual([
      ['timeline-leaf', 'done', true],
      ['timeline-leaf', 'done', true],
    ]);
    expect(info.children.map((c) => c.id)).toEqual(children.map((c) => c.id));
    expect(children[0]!.at.getTime()).toBeGreaterThanOrEqual(signals[0]!.at.getTime());

    // the parent's children, listed
    const listed = await listTasks(t.pool, { parent: handle, status: 'done' });
    expect(listed.tasks.map((task) => task.id)).toEqual([...children.map((c) => c.id)].reverse());
    expect(sql).toBeDefined();
  });
});
