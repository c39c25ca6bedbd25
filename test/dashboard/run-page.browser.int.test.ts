// The run page, its search and its actions in a real browser (Debian's Chromium through
// playwright-core) against a real PostgreSQL and runs a real worker executed, at a phone's width
// (390 px) and a desktop's: what a person sees and does, by keyboard and pointer, with axe-core
// finding no WCAG 2.1 A / AA violation on any page on the way, and nothing scrolling the page
// sideways.
import { createWorker, defineEvent, defineSignal, defineTask, enqueue, getTask, PermanentError, type TaskContext, type TaskInfo } from '@leasehold/core';
import { startDashboard, type RunningDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { launchBrowser, type TestBrowser } from './browser.js';
import { axeViolations, pageOverflow } from './axe.js';

const t = useTestDatabase();
const track = useWorkers();
let browser: TestBrowser;
let dashboard: RunningDashboard;

beforeAll(async () => {
  [browser, dashboard] = await Promise.all([launchBrowser(), startDashboard({ database: t.pool, port: 0 })]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), dashboard?.close()]);
});

const approve = defineSignal<{ by: string }>('approve');
const progress = defineEvent<{ stage: string }>('progress');
const grand = defineTask('rb-grand', { handler: (p: { n: number }) => p.n });
const child = defineTask('rb-child', {
  handler: async (p: { n: number }, ctx: TaskContext) => ctx.waitForChildren(await ctx.spawn('grand', grand, [{ payload: p }])),
});
// steps, a database step, an event, a sleep, children and theirs, then a wait for a signal: it
// stays waiting, so every action applies to it
const flow = defineTask('rb-flow', {
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('reserve', () => 1);
    await ctx.dbStep('record', async (client) => (await client.query('SELECT 1 AS n')).rows[0]);
    await ctx.setEvent(progress, { stage: 'reserved' });
    await ctx.sleep('nap', '50ms');
    await ctx.waitForChildren(await ctx.spawn('kids', child, [{ payload: { n: 1 } }, { payload: { n: 2 } }]));
    const signal = await ctx.waitForSignal(approve, { timeout: '1h' });
    return signal.timedOut ? null : signal.payload.by;
  },
});
const broken = defineTask('rb-broken', {
  maxAttempts: 1,
  handler: async (_p: object, ctx: TaskContext) => {
    await ctx.step('charge', () => 1);
    throw new PermanentError('the card was declined');
  },
});

/** Runs a task with a real worker until `test` holds of it (within a deadline), then stops the worker. */
async function runUntil(task: typeof flow | typeof broken, test: (info: TaskInfo) => boolean): Promise<TaskInfo> {
  const worker = track(createWorker({ pool: t.pool, tasks: [flow, child, grand, broken], concurrency: 4, pollInterval: 20, logger: null }));
  await worker.start();
  try {
    const run = await enqueue(t.pool, task, {});
    let info: TaskInfo | null = null;
    await expect.poll(async () => (info = await getTask(t.pool, run)) !== null && test(info), { timeout: 30_000, interval: 50 }).toBe(true);
    return info!;
  } finally {
    await worker.stop();
  }
}

const waiting = (info: TaskInfo) => info.status === 'waiting' && info.steps.some((s) => s.name === 'signal:approve' && !s.done);

async function open(path: string, width: number): Promise<Page> {
  const page = await browser.context.newPage();
  page.on('dialog', (d) => void d.dismiss().then(() => expect.fail(`a dialog opened: ${d.message()}`)));
  await page.setViewportSize({ width, height: 844 });
  await page.goto(new URL(path.replace(/^\//, ''), dashboard.url).toString());
  return page;
}

/** The page fits its width and axe-core finds nothing, in light and dark. */
async function checkPage(page: Page): Promise<void> {
  const { scrollWidth, clientWidth } = await pageOverflow(page);
  expect(scrollWidth, `${page.url()} is ${scrollWidth} px wide on a ${clientWidth} px screen`).toBeLessThanOrEqual(clientWidth);
  expect(await axeViolations(page)).toEqual([]);
}

async function signalsOf(id: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task_signal WHERE task_id = ${id}::bigint`.execute(t.db);
  return rows[0]!.n;
}

for (const width of [390, 1280]) {
  describe(`at ${width} px`, () => {
    it('shows the run: the timeline picture and its table, children, events, signals', async () => {
      const run = await runUntil(flow, waiting);
      const page = await open(`/tasks/${run.id}`, width);
      const picture = page.getByRole('figure', { name: /^Timeline of the run/ });
      await picture.waitFor();
      const rows = picture.locator('ol.tl-rows > li');
      expect(await rows.count()).toBe(run.timeline.length);
      expect(await rows.locator('rect.tl-bar').count()).toBe(run.timeline.length);
      // the open wait is drawn as under way, up to now
      expect(await rows.locator('rect.tl-wait.tl-open').count()).toBe(1);
      const table = page.getByRole('table').filter({ has: page.locator('caption', { hasText: 'The timeline as a table' }) });
      expect(await table.locator('tbody tr').count()).toBe(run.timeline.length);
      expect(await table.locator('tbody tr', { hasText: 'db step' }).locator('td').nth(1).textContent()).toBe('record');
      const children = page.locator('section', { has: page.getByRole('heading', { name: 'Children (2)' }) });
      expect(await children.locator('ul.tree > li').count()).toBe(2);
      expect(await children.locator('ul.tree ul li').count()).toBe(2); // each child's one grandchild
      expect(await page.locator('#s-events ~ div td').first().textContent()).toBe('progress');
      // each bar is beside its label on a desktop, below it on a phone, and as wide as there is room
      const label = (await rows.first().locator('.tl-label').boundingBox())!;
      const track = (await rows.first().locator('svg.tl-track').boundingBox())!;
      if (width === 390) expect(track.y).toBeGreaterThanOrEqual(label.y + label.height - 1);
      else expect(track.x).toBeGreaterThanOrEqual(label.x + label.width);
      expect(track.width).toBeGreaterThan(width === 390 ? 300 : 600);
      await checkPage(page);
      // a child's page links back up
      await children.locator('ul.tree > li > a').first().click();
      await page.getByText(`#${run.id}`, { exact: true }).waitFor();
      expect(await page.locator('dt', { hasText: 'Spawned by' }).count()).toBe(1);
      await page.close();
    });

    it('finds a run by its id, says what is wrong with a bad one, and lists a run\'s children', async () => {
      const run = await runUntil(flow, waiting);
      const page = await open('/tasks', width);
      await checkPage(page);
      await page.getByLabel('Task id').fill('12ab');
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Not a task id' }).waitFor();
      expect(await page.getByRole('alert').textContent()).toBe('"12ab" is not a task id: ids are whole numbers, such as 1042.');
      await checkPage(page);
      await page.goBack();
      await page.getByLabel('Task id').fill(run.id);
      await page.getByRole('button', { name: 'Open' }).click();
      await page.getByRole('heading', { name: `Task #${run.id}` }).waitFor();
      expect(new URL(page.url()).pathname).toBe(`/tasks/${run.id}`);

      await page.goto(new URL('tasks', dashboard.url).toString());
      await page.getByLabel('Children of (run id)').fill(run.id);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByText(`The children of run #${run.id}`).waitFor();
      const ids = await page.locator('table.rows tbody td:first-child a').allTextContents();
      expect(ids).toEqual(run.children.map((c) => c.id).reverse());
      await checkPage(page);
      await page.close();
    });

    it('sends a signal: bad JSON comes back as typed, and a double click on Confirm sends it once', async () => {
      const run = await runUntil(flow, waiting);
      const page = await open(`/tasks/${run.id}`, width);
      await page.getByLabel('Signal name').fill('approve');
      await page.getByLabel('Payload (JSON, optional)').fill('{"by": "ann",');
      await page.getByRole('button', { name: 'Send signal…' }).click();
      await page.getByRole('heading', { name: 'Cannot send that signal' }).waitFor();
      expect(await page.getByLabel('Payload (JSON, optional)').inputValue()).toBe('{"by": "ann",');
      expect(await page.getByLabel('Signal name').inputValue()).toBe('approve');
      await checkPage(page);
      await page.getByLabel('Payload (JSON, optional)').fill('{"by": "ann"}');
      await page.getByRole('button', { name: 'Send signal…' }).click();
      await page.getByRole('heading', { name: `Send signal "approve" to run #${run.id}?` }).waitFor();
      await checkPage(page);
      expect(await signalsOf(run.id)).toBe(0);
      await page.getByRole('button', { name: 'Confirm: send the signal' }).dblclick();
      await page.getByRole('heading', { name: 'Signal sent' }).waitFor();
      await checkPage(page);
      expect(await signalsOf(run.id)).toBe(1);
      await page.getByRole('link', { name: `Back to run #${run.id}` }).click();
      await page.getByRole('heading', { name: 'Signals (0 received, 1 pending)' }).waitFor();
      await page.close();
    });

    it('cancels a run, after confirming', async () => {
      const run = await runUntil(flow, waiting);
      const page = await open(`/tasks/${run.id}`, width);
      await page.getByLabel('Reason (kept on the run)').fill('customer withdrew');
      await page.getByRole('button', { name: 'Cancel run…' }).click();
      await page.getByRole('heading', { name: `Cancel run #${run.id}?` }).waitFor();
      await checkPage(page);
      await page.getByRole('button', { name: 'Confirm: cancel the run' }).click();
      await page.getByRole('heading', { name: 'Cancelled' }).waitFor();
      await checkPage(page);
      expect(await getTask(t.pool, run.id)).toMatchObject({ status: 'cancelled', resolution: 'cancelled: customer withdrew (via the leasehold dashboard)' });
      await page.close();
    });

    it('forks a run from a chosen step, and links to the fork', async () => {
      const run = await runUntil(flow, waiting);
      const page = await open(`/tasks/${run.id}`, width);
      await page.getByLabel('Run again from').selectOption('nap');
      await page.getByRole('button', { name: 'Fork…' }).click();
      await page.getByRole('heading', { name: `Fork run #${run.id} from "nap"?` }).waitFor();
      await checkPage(page);
      await page.getByRole('button', { name: 'Confirm: fork the run' }).click();
      await page.getByRole('heading', { name: 'Forked' }).waitFor();
      await checkPage(page);
      await page.getByRole('link', { name: /^Open the fork #\d+$/ }).click();
      await page.locator('dt', { hasText: 'Forked from' }).waitFor();
      expect(await page.locator('dd a', { hasText: `#${run.id}` }).count()).toBe(1);
      await checkPage(page);
      await page.close();
    });

    it('retries a dead run from its page, after confirming', async () => {
      const run = await runUntil(broken, (i) => i.status === 'dead');
      const page = await open(`/tasks/${run.id}`, width);
      await checkPage(page);
      await page.getByLabel('Reason (kept on the row)').fill('card updated');
      await page.getByRole('button', { name: 'Retry…' }).click();
      await page.getByRole('heading', { name: 'Retry 1 dead task?' }).waitFor();
      await checkPage(page);
      await page.getByRole('button', { name: 'Confirm: retry 1' }).click();
      await page.getByRole('heading', { name: 'Retried 1' }).waitFor();
      await checkPage(page);
      expect(await getTask(t.pool, run.id)).toMatchObject({ status: 'pending', resolution: 'retried: card updated (via the leasehold dashboard)' });
      await page.close();
    });
  });
}
