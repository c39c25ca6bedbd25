// The run page over HTTP against a real PostgreSQL and a real worker: what getTask reads of a
// workflow run (steps, a database step, a sleep, a signal wait, children and theirs, progress
// events, signals taken and pending, fork lineage) is what the page shows; the id search; and
// cancel, signal, fork and retry, each refused without the CSRF token and acting once when the
// confirmed form is posted twice.
import { createWorker, defineEvent, defineSignal, defineTask, enqueue, getTask, migrate, PermanentError, sendSignal, waitForResult, type TaskContext, type TaskInfo } from '@leasehold/core';
import { startDashboard, type RunningDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTasks, useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { DashboardClient, field, textOf } from './run-page-client.js';

const t = useTestDatabase();
const track = useWorkers();
let dashboard: RunningDashboard;
let readOnly: RunningDashboard;

beforeAll(async () => {
  [dashboard, readOnly] = await Promise.all([startDashboard({ database: t.pool, port: 0 }), startDashboard({ database: t.pool, port: 0, readOnly: true })]);
});

afterAll(async () => {
  await Promise.all([dashboard?.close(), readOnly?.close()]);
});

const approve = defineSignal<{ by: string }>('approve');
const progress = defineEvent<{ stage: string }>('progress');
const grand = defineTask('rp-grand', { handler: (p: { n: number }) => p.n * 10 });
const child = defineTask('rp-child', {
  handler: async (p: { n: number }, ctx: TaskContext) => {
    const kids = await ctx.spawn('grand', grand, [{ payload: { n: p.n } }]);
    return (await ctx.waitForChildren(kids))[0];
  },
});
const flow = defineTask('rp-flow', {
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('reserve', () => 1);
    await ctx.dbStep('record', async (client) => (await client.query('SELECT 2 AS n')).rows[0]);
    await ctx.setEvent(progress, { stage: 'reserved' });
    await ctx.sleep('nap', '50ms');
    const signal = await ctx.waitForSignal(approve, { timeout: '1h' });
    const kids = await ctx.spawn('kids', child, [{ payload: { n: 1 } }]);
    const results = await ctx.waitForChildren(kids);
    await ctx.setEvent(progress, { stage: 'approved' });
    return { by: signal.timedOut ? null : signal.payload.by, results };
  },
});
const gate = defineTask('rp-gate', {
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('prepare', () => 'ready');
    const signal = await ctx.waitForSignal(approve, { timeout: '1h' });
    return signal.timedOut ? null : signal.payload.by;
  },
});
const broken = defineTask('rp-broken', {
  maxAttempts: 1,
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('before', () => 1);
    throw new PermanentError('the card was declined');
  },
});

const worker = () => track(createWorker({ pool: t.pool, tasks: [flow, child, grand, gate, broken], concurrency: 4, pollInterval: 20, logger: null }));

/** Polls getTask until `test` holds, within a deadline. */
async function until(id: string, test: (info: TaskInfo) => boolean): Promise<TaskInfo> {
  let info: TaskInfo | null = null;
  await expect.poll(async () => ((info = await getTask(t.pool, id)) !== null && test(info)), { timeout: 30_000, interval: 50 }).toBe(true);
  return info!;
}

const waitingForSignal = (info: TaskInfo) => info.status === 'waiting' && info.steps.some((s) => s.name === 'signal:approve' && !s.done);

/** The timeline table's rows, as lists of cell texts. */
function timelineRows(html: string): string[][] {
  const table = /<table class="data timeline-table">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
  return table.split('<tr class=').slice(1).map((row) => [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => textOf(m[1]!)));
}

describe('the run page', () => {
  it('shows what getTask reads of a run a worker executed: steps, sleep, signal wait, children, events, signals', async () => {
    const w = worker();
    await w.start();
    const run = await enqueue(t.pool, flow, {});
    await until(run.id, waitingForSignal);
    await sendSignal(t.pool, run, approve, { by: 'ann' });
    await sendSignal(t.pool, run, defineSignal('unheard')); // never waited for: stays pending
    expect(await waitForResult(t.pool, run, { timeout: '30s' })).toEqual({ by: 'ann', results: [10] });
    await w.stop();
    const info = (await getTask(t.pool, run))!;
    const client = new DashboardClient(dashboard.url);
    const page = await client.get(`/tasks/${run.id}`);
    expect(page.status).toBe(200);

    // the picture, and the table with one row per timeline entry, in its order
    expect(page.text).toContain('<figure class="tl"');
    const rows = timelineRows(page.text);
    expect(rows.map((r) => r[1]!.replace(/ #\d+$/, ''))).toEqual(info.timeline.map((e) => e.name));
    const kinds = Object.fromEntries(rows.map((r) => [r[1]!, r[0]!]));
    expect(kinds).toMatchObject({ reserve: 'step', record: 'db step', nap: 'sleep', 'signal:approve': 'signal wait', kids: 'spawn', approve: 'signal', unheard: 'signal' });
    // each recorded call's claim (lease version), as getTask read it
    for (const step of info.steps) expect(rows.find((r) => r[1] === step.name)?.[5], step.name).toBe(String(step.leaseVersion));
    // the sleep and the wait have a measured duration; the pending signal says so
    expect(rows.find((r) => r[1] === 'nap')![4]).toMatch(/^\d+ (ms|s)$/);
    expect(rows.find((r) => r[1] === 'unheard')![6]).toBe('pending: no wait has taken it');

    // children, and theirs
    const [kid] = info.children;
    const kidInfo = (await getTask(t.pool, kid!.id))!;
    const text = textOf(page.text);
    expect(text).toContain(`Children (1) #${kid!.id} rp-child done`);
    expect(text).toContain(`#${kidInfo.children[0]!.id} rp-grand done`);
    expect(page.text).toContain(`href="/tasks?parent=${run.id}"`);
    // events with their latest value; signals received and pending
    expect(text).toMatch(/Progress events Key Value Set at Claim progress \{ "stage": "approved" \}/);
    expect(text).toContain('Signals (1 received, 1 pending)');

    // the child's page links back to its parent
    expect(textOf((await client.get(`/tasks/${kid!.id}`)).text)).toContain(`Spawned by #${run.id}`);
    // a run that ended offers fork, not cancel or signal
    expect(page.text).toContain('Fork…');
    expect(page.text).not.toContain('Cancel run…');
    expect(page.text).not.toContain('Send signal…');
    // read-only: no actions at all
    const quiet = await new DashboardClient(readOnly.url).get(`/tasks/${run.id}`);
    expect(quiet.text).toContain('<figure class="tl"');
    expect(quiet.text).not.toContain('Fork…');
  });
});

describe('a wide tree', () => {
  it('shows the first ten children of a child, and how many more, linking to the list of them all', async () => {
    const [parent, kid, ...grandkids] = await insertTasks(t.db, 14, { name: 'rp-wide', status: 'done' });
    await sql`UPDATE leasehold.task SET parent_id = ${parent}::bigint WHERE id = ${kid}::bigint`.execute(t.db);
    await sql`UPDATE leasehold.task SET parent_id = ${kid}::bigint WHERE id = ANY(${grandkids}::bigint[])`.execute(t.db);
    const page = await new DashboardClient(dashboard.url).get(`/tasks/${parent}`);
    const tree = /<ul class="tree">([\s\S]*?)<\/section>/.exec(page.text)![1]!;
    expect([...tree.matchAll(/<a href="\/tasks\/(\d+)">#/g)].map((m) => m[1])).toEqual([kid, ...grandkids.slice(0, 10)]);
    expect(tree).toContain(`<a href="/tasks?parent=${kid}">and 2 more</a>`);
  });
});

describe('hostile names', () => {
  it('shows a signal name holding markup as text, in the timeline and the signals table', async () => {
    const hostile = '<img src=x onerror=alert(1)>';
    const run = await enqueue(t.pool, gate, {});
    await sendSignal(t.pool, run, defineSignal(hostile));
    const page = await new DashboardClient(dashboard.url).get(`/tasks/${run.id}`);
    expect(page.text).not.toContain(hostile);
    expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(textOf(page.text)).toContain(`signal ${hostile}`);
  });
});

describe('an older schema', () => {
  it('shows a task\'s row without its run where the schema has no events table nor forked_from column', async () => {
    await migrate(t.pool, { schema: 'before_runs' });
    await sql`DROP TABLE before_runs.task_event`.execute(t.db);
    await sql`ALTER TABLE before_runs.task DROP COLUMN forked_from CASCADE`.execute(t.db);
    const { id } = await enqueue(t.pool, gate, {}, { schema: 'before_runs' });
    const older = await startDashboard({ database: t.pool, port: 0, schema: 'before_runs' });
    try {
      const page = await new DashboardClient(older.url).get(`/tasks/${id}`);
      expect(page.status).toBe(200);
      expect(textOf(page.text)).toContain('Summary Status pending Name rp-gate');
      expect(page.text).not.toContain('<figure class="tl"');
    } finally {
      await older.close();
    }
  });
});

describe('search', () => {
  it('goes straight to a run by id, and says what is wrong with a bad or unknown id', async () => {
    const run = await enqueue(t.pool, gate, {});
    const client = new DashboardClient(dashboard.url);
    const found = await client.get(`/tasks/find?id=${run.id}`);
    expect([found.status, found.location]).toEqual([303, `/tasks/${run.id}`]);
    expect((await client.get(`/tasks/find?id=%23${run.id}`)).location).toBe(`/tasks/${run.id}`);
    const bad = await client.get('/tasks/find?id=12ab');
    expect(bad.status).toBe(400);
    expect(textOf(bad.text)).toContain('"12ab" is not a task id: ids are whole numbers, such as 1042.');
    const unknown = await client.get('/tasks/find?id=987654321');
    expect(unknown.status).toBe(404);
    expect(textOf(unknown.text)).toContain('There is no task #987654321');
    expect((await client.get('/tasks')).text).toContain('action="/tasks/find"');
  });

  it('lists a run\'s children, keyset-paged, with the other filters', async () => {
    const w = worker();
    await w.start();
    const runs = await Promise.all([enqueue(t.pool, flow, {}), enqueue(t.pool, gate, {})]);
    await until(runs[0].id, waitingForSignal);
    await sendSignal(t.pool, runs[0], approve, { by: 'bo' });
    await waitForResult(t.pool, runs[0], { timeout: '30s' });
    await w.stop({ timeout: 0 });
    const kids = (await getTask(t.pool, runs[0]))!.children;
    const client = new DashboardClient(dashboard.url);
    const list = await client.get(`/tasks?parent=${runs[0].id}`);
    expect(list.status).toBe(200);
    const ids = [...list.text.matchAll(/<td><a href="\/tasks\/(\d+)">/g)].map((m) => m[1]);
    expect(ids).toEqual(kids.map((k) => k.id).reverse());
    expect((await client.get(`/tasks?parent=${runs[0].id}&status=dead`)).text).toContain('No matching rows');
    expect((await client.get('/tasks?parent=x')).status).toBe(400);
  });
});

describe('actions', () => {
  it('sends a signal once when the confirmed form is posted twice; bad JSON is a 400 that keeps what was typed', async () => {
    const w = worker();
    await w.start();
    const run = await enqueue(t.pool, gate, {});
    await until(run.id, waitingForSignal);
    const client = new DashboardClient(dashboard.url);
    const _csrf = await client.token(`/tasks/${run.id}`);

    const typed = '{"by": "ann",';
    const bad = await client.post(`/tasks/${run.id}/signal/confirm`, { _csrf, name: 'approve', payload: typed });
    expect(bad.status).toBe(400);
    expect(textOf(bad.text)).toContain('The payload is not valid JSON');
    expect(bad.text).toContain('{&quot;by&quot;: &quot;ann&quot;,</textarea>'); // kept whole, escaped
    expect(bad.text).toMatch(/name="name"[^>]*value="approve"/);

    const confirm = await client.post(`/tasks/${run.id}/signal/confirm`, { _csrf, name: 'approve', payload: '{"by": "ann"}' });
    expect(confirm.status).toBe(200);
    expect(textOf(confirm.text)).toContain(`Send signal "approve" to run #${run.id}?`);
    expect(await signals(run.id)).toBe(0); // the confirmation changes nothing
    const form = { _csrf, key: field(confirm.text, 'key'), name: 'approve', payload: field(confirm.text, 'payload') };
    const [first, second] = [await client.post(`/tasks/${run.id}/signal/apply`, form), await client.post(`/tasks/${run.id}/signal/apply`, form)];
    expect([first.status, second.status]).toEqual([303, 303]);
    expect(second.location).toBe(first.location);
    expect(textOf((await client.get(first.location!)).text)).toContain(`The signal is stored for run #${run.id}`);
    expect(await waitForResult(t.pool, run, { timeout: '30s' })).toBe('ann');
    expect(await signals(run.id)).toBe(1);
    await w.stop();
  });

  it('cancels a waiting run once, with the reason kept', async () => {
    const w = worker();
    await w.start();
    const run = await enqueue(t.pool, gate, {});
    await until(run.id, waitingForSignal);
    await w.stop();
    const client = new DashboardClient(dashboard.url);
    const _csrf = await client.token(`/tasks/${run.id}`);
    const confirm = await client.post(`/tasks/${run.id}/cancel/confirm`, { _csrf, reason: 'customer withdrew' });
    expect(textOf(confirm.text)).toContain(`Cancel run #${run.id}?`);
    expect((await getTask(t.pool, run))!.status).toBe('waiting');
    const form = { _csrf, key: field(confirm.text, 'key'), reason: field(confirm.text, 'reason') };
    const [first, second] = [await client.post(`/tasks/${run.id}/cancel/apply`, form), await client.post(`/tasks/${run.id}/cancel/apply`, form)];
    expect(second.location).toBe(first.location);
    // acted once: a second run of cancelTask would have found the run ended and said "nothing"
    expect(textOf((await client.get(first.location!)).text)).toContain(`Cancelled #${run.id}.`);
    expect(await getTask(t.pool, run)).toMatchObject({ status: 'cancelled', resolution: 'cancelled: customer withdrew (via the leasehold dashboard)' });
  });

  it('forks a run from a recorded step once, linking the fork to it', async () => {
    const w = worker();
    await w.start();
    const run = await enqueue(t.pool, gate, {});
    await until(run.id, waitingForSignal);
    await sendSignal(t.pool, run, approve, { by: 'cy' });
    await waitForResult(t.pool, run, { timeout: '30s' });
    await w.stop();
    const client = new DashboardClient(dashboard.url);
    const page = await client.get(`/tasks/${run.id}`);
    expect(page.text).toContain('<option value="prepare">prepare</option>');
    const _csrf = field(page.text, '_csrf');
    const confirm = await client.post(`/tasks/${run.id}/fork/confirm`, { _csrf, fromStep: 'signal:approve' });
    expect(textOf(confirm.text)).toContain(`Fork run #${run.id} from "signal:approve"?`);
    const form = { _csrf, key: field(confirm.text, 'key'), fromStep: 'signal:approve' };
    const [first, second] = [await client.post(`/tasks/${run.id}/fork/apply`, form), await client.post(`/tasks/${run.id}/fork/apply`, form)];
    expect(second.location).toBe(first.location);
    const forks = await sql<{ id: string }>`SELECT id::text FROM leasehold.task WHERE forked_from = ${run.id}::bigint`.execute(t.db);
    expect(forks.rows).toHaveLength(1);
    const fork = forks.rows[0]!.id;
    const result = await client.get(first.location!);
    expect(textOf(result.text)).toContain(`The new run is #${fork}, forked from #${run.id}.`);
    expect(result.text).toContain(`href="/tasks/${fork}">Open the fork #${fork}</a>`);
    expect(textOf((await client.get(`/tasks/${fork}`)).text)).toContain(`Forked from #${run.id}`);

    // a step the run did not record: nothing changes, core's reason is shown
    const again = await client.post(`/tasks/${run.id}/fork/confirm`, { _csrf, fromStep: 'nope' });
    const refused = await client.post(`/tasks/${run.id}/fork/apply`, { _csrf, key: field(again.text, 'key'), fromStep: 'nope' });
    expect(textOf((await client.get(refused.location!)).text)).toContain('Nothing changed');
  });

  it('retries a dead run once, from its page (the dead letters\' retry)', async () => {
    const w = worker();
    await w.start();
    const run = await enqueue(t.pool, broken, {});
    await until(run.id, (i) => i.status === 'dead');
    await w.stop();
    const client = new DashboardClient(dashboard.url);
    const page = await client.get(`/tasks/${run.id}`);
    expect(page.text).toContain('action="/dead/confirm"');
    const _csrf = field(page.text, '_csrf');
    const confirm = await client.post('/dead/confirm', { _csrf, table: 'task', ids: run.id, action: 'retry', reason: 'card updated' });
    expect(textOf(confirm.text)).toContain('Retry 1 dead task?');
    const form = { _csrf, table: 'task', ids: run.id, action: 'retry', reason: 'card updated', key: field(confirm.text, 'key') };
    const [first, second] = [await client.post('/dead/apply', form), await client.post('/dead/apply', form)];
    expect(second.location).toBe(first.location);
    expect(textOf((await client.get(first.location!)).text)).toContain(`Retried: #${run.id}.`);
    expect(await getTask(t.pool, run)).toMatchObject({ status: 'pending', attempts: 0, resolution: 'retried: card updated (via the leasehold dashboard)' });
  });

  it('refuses every action without the CSRF token or with a wrong one', async () => {
    const run = await enqueue(t.pool, gate, {});
    const client = new DashboardClient(dashboard.url);
    const _csrf = await client.token(`/tasks/${run.id}`);
    const forms = { cancel: { reason: 'x' }, signal: { name: 'approve', payload: '{}' }, fork: { fromStep: 'prepare' } };
    for (const [action, form] of Object.entries(forms)) {
      const key = field((await client.post(`/tasks/${run.id}/${action}/confirm`, { _csrf, ...form })).text, 'key');
      for (const step of ['confirm', 'apply']) {
        const none = await client.post(`/tasks/${run.id}/${action}/${step}`, { ...form, key });
        const wrong = await client.post(`/tasks/${run.id}/${action}/${step}`, { ...form, key, _csrf: `${_csrf.slice(0, -2)}xx` });
        expect([none.status, wrong.status], `${action} ${step}`).toEqual([403, 403]);
        expect(none.text).toContain('CSRF');
      }
    }
    expect(await getTask(t.pool, run)).toMatchObject({ status: 'pending', resolution: null });
    expect(await signals(run.id)).toBe(0);
  });
});

async function signals(id: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_signal WHERE task_id = ${id}::bigint`.execute(t.db);
  return rows[0]!.n;
}
