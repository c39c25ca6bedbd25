// What the dashboard's pages show, in a real browser against a real PostgreSQL: a task's lease,
// fencing token, checkpoint and error; an outbox aggregate blocked by its dead head; payloads
// through the user's redact function; flow-control limits; and every main view on a phone-sized
// screen.
import { createWorker, defineLimit, defineTask, enqueueMany, migrate } from '@leasehold/core';
import { createOutbox } from '@leasehold/outbox';
import { startDashboard, type RedactContext, type RunningDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTasks, useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { axeViolations } from './axe.js';
import { launchBrowser, type TestBrowser } from './browser.js';

const t = useTestDatabase();
const track = useWorkers();
let browser: TestBrowser;
let dashboard: RunningDashboard;
let redacting: RunningDashboard;
const redactCalls: RedactContext[] = [];

beforeAll(async () => {
  [browser, dashboard, redacting] = await Promise.all([
    launchBrowser(),
    startDashboard({ database: t.pool, port: 0 }),
    startDashboard({
      database: t.pool,
      port: 0,
      // mask e-mail addresses and drop an authorization header, whatever the table
      redact: (value, context) => {
        redactCalls.push(context);
        if (value === null || typeof value !== 'object') return value;
        const { email, authorization, ...rest } = value as Record<string, unknown>;
        return { ...rest, ...(email === undefined ? {} : { email: '•••' }), ...(authorization === undefined ? {} : { authorization: '[removed]' }) };
      },
    }),
  ]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), dashboard?.close(), redacting?.close()]);
});

async function open(path: string, base = dashboard.url, width = 1280): Promise<Page> {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height: 844 });
  const response = await page.goto(new URL(path.replace(/^\//, ''), base).toString());
  expect(response?.status(), path).toBe(200);
  return page;
}

/** The text of a fact (`<dt>term</dt><dd>…</dd>`) on a row page. */
async function fact(page: Page, term: string): Promise<string> {
  return (await page.locator('dl.facts > div', { has: page.locator('dt', { hasText: new RegExp(`^${term}$`) }) }).locator('dd').textContent()) ?? '';
}

/** An ordered aggregate of three events whose first is dead: the other two wait behind it. */
async function blockedAggregate(key: string): Promise<string[]> {
  const outbox = createOutbox({ orderedEventTypes: ['OrderPlaced', 'OrderPaid'] });
  const ids: string[] = [];
  await t.db.transaction().execute(async (trx) => {
    for (const eventType of ['OrderPlaced', 'OrderPaid', 'OrderPaid']) {
      ids.push(await outbox.add(trx, { aggregateType: 'order', aggregateId: key, eventType, payload: { order: key, email: 'ada@example.com' } }));
    }
  });
  await sql`UPDATE leasehold.outbox SET status = 'dead', attempts = 12, last_error = 'HTTP 410 Gone: the receiver deleted order ' || ${key}
            WHERE id = ${ids[0]}::bigint`.execute(t.db);
  return ids;
}

describe('the task page', () => {
  it('shows the lease owner and deadline, the fencing token, attempts, checkpoint, payload and last error', async () => {
    const [id] = await insertTasks(t.db, 1, {
      name: 'report.build', status: 'processing', attempts: 2, maxAttempts: 5, leaseVersion: 7, leaseUntilOffsetMs: 90_000, payload: { month: '2026-11' },
    });
    await sql`UPDATE leasehold.task SET lease_owner = 'worker-7@host-a', checkpoint = '{"page": 40}'::jsonb,
              last_error = 'Error: timeout after 30 s' WHERE id = ${id}::bigint`.execute(t.db);
    const page = await open(`/tasks/${id}`);
    expect(await fact(page, 'Status')).toBe('processing');
    expect(await fact(page, 'Attempts')).toBe('2 of 5');
    expect(await fact(page, 'Owner')).toBe('worker-7@host-a');
    expect(await fact(page, 'Fencing token')).toBe('7');
    expect(await fact(page, 'Deadline')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(in 1 min (2\d|30) s\)$/);
    expect(await page.locator('#s-checkpoint ~ pre').textContent()).toBe('{\n  "page": 40\n}');
    expect(await page.locator('#s-payload ~ pre').textContent()).toContain('"month": "2026-11"');
    expect(await page.locator('#s-error ~ pre').textContent()).toBe('Error: timeout after 30 s');
    await page.close();
  });

  it('shows a task its trace id, from the trace context enqueue stored', async () => {
    const [id] = await insertTasks(t.db, 1, { name: 'traced' });
    await sql`UPDATE leasehold.task SET traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate = 'vendor=1'
              WHERE id = ${id}::bigint`.execute(t.db);
    const page = await open(`/tasks/${id}`);
    expect(await fact(page, 'Trace id')).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(await fact(page, 'tracestate')).toBe('vendor=1');
    await page.close();
  });

  it('shows an outbox message its trace id, from the traceparent header', async () => {
    const outbox = createOutbox();
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const id = await outbox.add(t.pool, { aggregateType: 'user', aggregateId: '7', eventType: 'UserCreated', payload: {}, headers: { traceparent } });
    const page = await open(`/outbox/${id}`);
    expect(await fact(page, 'Trace id')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(await fact(page, 'Parent span id')).toBe('00f067aa0ba902b7');
    await page.close();
  });
});

describe('the outbox by aggregate', () => {
  it('lists an aggregate blocked by its dead head, and its page says why and offers retry / skip', async () => {
    const [head, ...waiting] = await blockedAggregate('A-1001');
    const page = await open('/outbox');
    const row = page.locator('#h-blocked ~ div tr', { has: page.locator('th', { hasText: 'A-1001' }) });
    expect(await row.locator('td').nth(0).textContent()).toBe(`#${head}`);
    expect(await row.locator('td').nth(2).textContent()).toBe('2');
    expect(await row.locator('td.error').textContent()).toBe('HTTP 410 Gone: the receiver deleted order A-1001');
    await row.getByRole('link', { name: 'A-1001' }).click();
    await page.getByRole('heading', { name: 'Blocked by its dead head' }).waitFor();
    const callout = await page.locator('section.callout').textContent();
    expect(callout).toContain(`#${head} (OrderPlaced) died after 12 attempt(s); 2 row(s) wait behind it`);
    expect(await page.locator('section.callout').getByRole('button', { name: 'Skip…' }).count()).toBe(1);
    const order = await page.locator('table.rows tbody tr td:first-child a').allTextContents();
    expect(order).toEqual([head, ...waiting]);
    await page.close();
  });
});

describe('redaction', () => {
  it('shows payloads, checkpoints and headers only as the redact function returns them', async () => {
    const [task] = await insertTasks(t.db, 1, { name: 'mail.welcome', payload: { email: 'ada@example.com', plan: 'pro' } });
    await sql`UPDATE leasehold.task SET checkpoint = '{"email": "ada@example.com", "sent": false}'::jsonb WHERE id = ${task}::bigint`.execute(t.db);
    const message = await createOutbox().add(t.pool, {
      aggregateType: 'user', aggregateId: '9', eventType: 'UserCreated', payload: { email: 'ada@example.com' }, headers: { authorization: 'Bearer s3cret' },
    });
    const taskPage = await open(`/tasks/${task}`, redacting.url);
    const taskHtml = await taskPage.content();
    expect(taskHtml).not.toContain('ada@example.com');
    expect(await taskPage.locator('#s-payload ~ pre').textContent()).toBe('{\n  "plan": "pro",\n  "email": "•••"\n}');
    expect(await taskPage.locator('#s-checkpoint ~ pre').textContent()).toContain('"email": "•••"');
    const outboxPage = await open(`/outbox/${message}`, redacting.url);
    const outboxHtml = await outboxPage.content();
    expect(outboxHtml).not.toContain('ada@example.com');
    expect(outboxHtml).not.toContain('s3cret');
    expect(await outboxPage.locator('#s-headers ~ pre').textContent()).toContain('"authorization": "[removed]"');
    expect(redactCalls).toEqual(expect.arrayContaining([
      { table: 'task', field: 'payload', id: task, name: 'mail.welcome' },
      { table: 'task', field: 'checkpoint', id: task, name: 'mail.welcome' },
      { table: 'outbox', field: 'payload', id: message, name: 'UserCreated' },
      { table: 'outbox', field: 'headers', id: message, name: 'UserCreated' },
    ]));
    // the same rows without a redact function: stored values, as they are
    const plain = await open(`/tasks/${task}`);
    expect(await plain.locator('#s-payload ~ pre').textContent()).toContain('ada@example.com');
    await Promise.all([taskPage.close(), outboxPage.close(), plain.close()]);
  });
});

describe('limits', () => {
  /** The cells of the limit `name`'s row, as text. */
  async function limitRow(page: Page, name: string): Promise<string[]> {
    return page.locator('table.data tbody tr', { has: page.locator('th', { hasText: new RegExp(`^${name}$`) }) }).locator('td').allTextContents();
  }

  it('lists each limit with its bounds, what runs and waits under it now, and when it was last declared', async () => {
    // a global rate over an hour: the two starts stay in its window however slow the machine
    const api = defineLimit('partner-api', { concurrency: 3, concurrencyPerKey: 1, rate: { limit: 50, period: '1h' }, ratePerKey: { limit: 10, period: '1m' } });
    const task = defineTask<{ n: number }>('sync-account', { limit: api, handler: () => new Promise(() => {}) });
    await enqueueMany(t.pool, task, Array.from({ length: 5 }, (_, n) => ({ payload: { n }, limitKey: `acct-${n % 2}` })));
    const worker = track(createWorker({ pool: t.pool, tasks: [task], concurrency: 4, logger: null }));
    await worker.start();
    await expect.poll(() => worker.runningCount, { timeout: 20_000 }).toBe(2); // one per key
    // a limit the code has dropped: last declared three days ago, for the task partner-api runs now
    await sql`INSERT INTO leasehold.task_limit (name, concurrency, task_names, seen_at, seen_by)
              VALUES ('old-api', 1, '{sync-account}', now() - interval '3 days', 'worker-old')`.execute(t.db);
    const page = await open('/limits');
    const [tasks, concurrency, perKey, rate, ratePerKey, running, starts, pending, seen] = await limitRow(page, 'partner-api');
    expect([tasks, concurrency, perKey, rate, ratePerKey, running, starts, pending])
      .toEqual(['sync-account', '3', '1', '50 per 1 h', '10 per 1 min', '2 of 3, on 2 keys', '2 of 50 in 1 h', '3']);
    expect(seen).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(\d+ (ms|s|min \d+ s) ago, by /);
    expect(seen?.endsWith(`, by ${worker.owner})`), seen).toBe(true);
    const old = await limitRow(page, 'old-api');
    expect(old.slice(0, 8)).toEqual(['sync-account', '1', '—', '—', '—', '0 of 1', '—', '0']);
    expect(old[8]).toContain('(3 d ago, by worker-old)');
    expect(old[8]).toMatch(/stale sync-account declared under partner-api since \d{4}-/);
    // read-only: no form, and the page says where limits change
    expect(await page.locator('main form').count()).toBe(0);
    expect(await page.locator('main').textContent()).toContain('a changed bound applies from the next worker start');
    await page.close();
    await worker.stop({ timeout: 0 });
  });

  it('says so on a schema migrated before limits existed, instead of failing', async () => {
    await migrate(t.pool, { schema: 'before_limits' });
    await sql`DROP TABLE before_limits.task_limit`.execute(t.db);
    const older = await startDashboard({ database: t.pool, port: 0, schema: 'before_limits' });
    try {
      const page = await open('/limits', older.url);
      expect(await page.locator('main .notice').textContent()).toContain('This schema has no limits table yet');
      expect(await page.getByRole('link', { name: 'Limits' }).getAttribute('aria-current')).toBe('page');
      await page.close();
    } finally {
      await older.close();
    }
  });
});

describe('a narrow screen (390 px)', () => {
  it('shows every main view without scrolling the page sideways (wide tables scroll in their own region)', async () => {
    const long = `${'x'.repeat(180)}/${'y'.repeat(180)}`; // no space to break at
    const [dead] = await insertTasks(t.db, 1, { name: `narrow.${'n'.repeat(60)}`, status: 'dead', groupKey: `group-${'k'.repeat(80)}`, payload: { long } });
    await sql`UPDATE leasehold.task SET last_error = ${`Error: ${long}`} WHERE id = ${dead}::bigint`.execute(t.db);
    await blockedAggregate(`narrow-${'a'.repeat(60)}`);
    const views = ['/', '/tasks', `/tasks/${dead}`, '/tasks?status=dead', '/dead', '/outbox', `/outbox/group?key=narrow-${'a'.repeat(60)}`, '/schedules', '/limits', '/versions'];
    for (const path of views) {
      const page = await open(path, dashboard.url, 390);
      const widths = (await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]')) as [number, number];
      expect(widths[0], `${path} is ${widths[0]} px wide on a ${widths[1]} px screen`).toBeLessThanOrEqual(widths[1]);
      await page.close();
    }
    // the retry confirmation too, reached by keyboard alone: Tab to the reason, type, Enter
    const page = await open(`/tasks/${dead}`, dashboard.url, 390);
    await page.getByLabel('Reason (kept on the row)').focus();
    await page.keyboard.type('fixed upstream');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Retry 1 dead task?' }).waitFor();
    const widths = (await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]')) as [number, number];
    expect(widths[0]).toBeLessThanOrEqual(widths[1]);
    await page.close();
  });
});

describe('accessibility', () => {
  it('has no WCAG 2.1 A / AA violations axe-core can find on the main views, in light and dark', async () => {
    const [dead] = await insertTasks(t.db, 1, { name: 'a11y.mail', status: 'dead', groupKey: 'a11y-group', attempts: 3, maxAttempts: 3 });
    await sql`UPDATE leasehold.task SET last_error = 'SMTP 550' WHERE id = ${dead}::bigint`.execute(t.db);
    await insertTasks(t.db, 2, { name: 'a11y.mail' });
    await blockedAggregate('A-a11y');
    // a live worker that accepts no version of a11y.mail: /versions highlights its runs
    await sql`INSERT INTO leasehold.task_worker (owner, accepts) VALUES ('a11y-worker', '{"other": [1]}')`.execute(t.db);
    const views = ['/', '/tasks', '/tasks?status=dead', `/tasks/${dead}`, '/dead', '/outbox', '/outbox/group?key=order%3AA-a11y', '/schedules', '/limits', '/versions'];
    const found: string[] = [];
    for (const path of views) {
      const page = await open(path);
      found.push(...(await axeViolations(page)));
      await page.close();
    }
    expect(found).toEqual([]);
  });
});
