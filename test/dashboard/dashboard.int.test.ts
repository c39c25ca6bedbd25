// The dashboard in a real browser (Debian's Chromium through playwright-core) against a real
// PostgreSQL: what an operator does at 3 a.m., and what an attacker's strings and forged requests
// must not do.
import { get as httpGet } from 'node:http';
import { createWorker, defineTask, isLeaseholdError } from '@leasehold/core';
import { startDashboard, type RunningDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTasks, readTask, useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { launchBrowser, type TestBrowser } from './browser.js';

const t = useTestDatabase();
const track = useWorkers();
let browser: TestBrowser;
let dashboard: RunningDashboard;
let readOnly: RunningDashboard;

beforeAll(async () => {
  [browser, dashboard, readOnly] = await Promise.all([
    launchBrowser(),
    startDashboard({ database: t.pool, port: 0, refreshIntervalMs: 500 }),
    startDashboard({ database: t.pool, port: 0, readOnly: true }),
  ]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), dashboard?.close(), readOnly?.close()]);
});

async function open(path: string, base = dashboard.url): Promise<Page> {
  const page = await browser.context.newPage();
  // an alert() means a hostile string ran as script: fail loudly
  page.on('dialog', (d) => void d.dismiss().then(() => expect.fail(`a dialog opened: ${d.message()}`)));
  await page.goto(new URL(path.replace(/^\//, ''), base).toString());
  return page;
}

async function deadTask(name: string, error: string, payload: unknown = {}): Promise<string> {
  const [id] = await insertTasks(t.db, 1, { name, status: 'dead', attempts: 3, maxAttempts: 3, payload });
  await sql`UPDATE leasehold.task SET last_error = ${error} WHERE id = ${id}::bigint`.execute(t.db);
  return id!;
}

describe('the operator', () => {
  it('sees the overview per task name, and it updates itself', async () => {
    await insertTasks(t.db, 3, { name: 'overview.mail' });
    await deadTask('overview.mail', 'SMTP 550');
    const page = await open('/');
    const row = page.locator('tr', { has: page.locator('th', { hasText: 'overview.mail' }) });
    expect(await row.locator('td').nth(0).textContent()).toBe('1'); // dead
    expect(await row.locator('td').nth(1).textContent()).toBe('3'); // pending
    expect(await page.locator('svg[role=img] title').first().textContent()).toContain('Finished per minute');
    // live: a new task shows up without a reload (htmx polls every 500 ms here)
    await insertTasks(t.db, 2, { name: 'overview.mail' });
    await expect.poll(() => row.locator('td').nth(1).textContent(), { timeout: 10_000 }).toBe('5');
    await page.close();
  });

  it('keeps the focused link and a table scrolled sideways as they are when the overview updates', async () => {
    await insertTasks(t.db, 1, { name: 'overview.scroll' });
    const page = await open('/');
    await page.setViewportSize({ width: 390, height: 844 });
    const link = page.getByRole('link', { name: 'overview.scroll', exact: true });
    await link.focus();
    await page.evaluate(`document.querySelector('#live .scroll').scrollLeft = 120`);
    const updated = await page.locator('#updated-at').getAttribute('datetime');
    await insertTasks(t.db, 1, { name: 'overview.scroll' }); // something to update
    await expect.poll(() => page.locator('#updated-at').getAttribute('datetime'), { timeout: 10_000 }).not.toBe(updated);
    expect(await page.evaluate(`document.activeElement.textContent`)).toBe('overview.scroll');
    expect(await page.evaluate(`document.querySelector('#live .scroll').scrollLeft`)).toBe(120);
    await page.close();
  });

  it('refreshes less often when counting takes long, and says why', async () => {
    // the read-only dashboard refreshes at the default, every 5 s
    const quick = await (await fetch(readOnly.url)).text();
    expect(quick).toContain('hx-trigger="every 5s"');
    expect(quick).not.toContain('counting took');
    // hold the counts back: a lock the overview's statements wait for, for over a second
    const client = await t.client();
    await client.query('BEGIN');
    await client.query('LOCK TABLE leasehold.task IN ACCESS EXCLUSIVE MODE');
    let slow: Promise<string>;
    try {
      slow = fetch(readOnly.url).then((r) => r.text());
      // read from the pool, not from the locking transaction: within a transaction PostgreSQL
      // keeps the first reading of pg_stat_activity's queries and start times, so a statement
      // that began after it would never show
      const waitedMs = async () => {
        const { rows } = await sql<{ ms: number | null }>`
          SELECT max(extract(epoch FROM clock_timestamp() - query_start) * 1000)::float8 AS ms FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%count(*)%'`.execute(t.db);
        return rows[0]!.ms ?? 0;
      };
      await expect.poll(waitedMs, { timeout: 20_000, interval: 100 }).toBeGreaterThan(1_500);
    } finally {
      // a failure here must not leave the table locked for the tests after it
      await client.query('COMMIT');
    }
    // ten times the counting time, in whole seconds: one open page keeps the database busy a tenth of the time at most
    const html = await slow;
    const seconds = Number(/hx-trigger="every (\d+)s"/.exec(html)?.[1]);
    expect(seconds).toBeGreaterThanOrEqual(6);
    expect(html).toContain(`refreshes every ${seconds}s (counting took `);
    expect(html).toMatch(/refreshes every \d+s \(counting took [^)]+\)\./);
  });

  it('filters the list by status and name through the form', async () => {
    await insertTasks(t.db, 4, { name: 'filter.a' });
    const dead = await deadTask('filter.a', 'boom');
    await insertTasks(t.db, 2, { name: 'filter.b', status: 'dead' });
    const page = await open('/tasks');
    await page.getByLabel('Status').selectOption('dead');
    await page.getByLabel('Task name').fill('filter.a');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=dead/);
    const ids = await page.locator('table.rows tbody tr td:first-child a').allTextContents();
    expect(ids).toEqual([dead]);
    await page.close();
  });

  it('opens a dead task, retries it with a reason after confirming, and sees it run', async () => {
    const ran: string[] = [];
    const task = defineTask<{ n: number }>('retry.me', { handler: (p) => void ran.push(String(p.n)) });
    const worker = track(createWorker({ pool: t.pool, tasks: [task], pollInterval: '100ms' }));
    await worker.start();
    const id = await deadTask('retry.me', 'the mail server was down', { n: 7 });
    const page = await open('/dead');
    await page.getByRole('link', { name: id, exact: true }).click();
    await page.waitForURL(new RegExp(`/tasks/${id}$`));
    await page.getByLabel('Reason (kept on the row)').fill('mail server is back');
    await page.getByRole('button', { name: 'Retry…' }).click();
    // the confirmation changes nothing yet
    await page.getByRole('heading', { name: 'Retry 1 dead task?' }).waitFor();
    expect((await readTask(t.db, id)).status).toBe('dead');
    const succeeded = nextEvent(worker, 'task:succeeded', (e) => e.task.id === id);
    await page.getByRole('button', { name: /^Confirm: retry 1/ }).click();
    await page.getByRole('heading', { name: 'Retried 1' }).waitFor();
    await succeeded;
    expect(ran).toEqual(['7']);
    await page.goto(new URL(`tasks/${id}`, dashboard.url).toString());
    expect(await page.locator('.facts .status').first().textContent()).toBe('done');
    expect(await page.getByText('retried: mail server is back (via the leasehold dashboard)').count()).toBe(1);
    await page.close();
    await worker.stop();
  });

  it('gets the first outcome again when a confirmed retry is posted twice (idempotency key)', async () => {
    const id = await deadTask('twice', 'x');
    const page = await open(`/tasks/${id}`);
    await page.getByLabel('Reason (kept on the row)').fill('once');
    await page.getByRole('button', { name: 'Retry…' }).click();
    const form = page.locator('form.confirm');
    const fields: Record<string, string> = {};
    for (const input of await form.locator('input[name], textarea[name]').all()) {
      fields[(await input.getAttribute('name'))!] = await input.inputValue();
    }
    expect(Object.keys(fields)).toEqual(expect.arrayContaining(['_csrf', 'ids', 'action']));
    const post = () => page.request.post(new URL('dead/apply', dashboard.url).toString(), { form: fields, maxRedirects: 0 });
    const [first, second] = [await post(), await post()];
    expect([first.status(), second.status()]).toEqual([303, 303]);
    expect(second.headers().location).toBe(first.headers().location);
    const outcome = await page.request.get(new URL(first.headers().location!.replace(/^\//, ''), dashboard.url).toString());
    expect(await outcome.text()).toContain('Retried 1');
    const stored = await sql<{ resolution: string }>`SELECT resolution FROM leasehold.task WHERE id = ${id}::bigint`.execute(t.db);
    expect(stored.rows[0]!.resolution).toBe('retried: once (via the leasehold dashboard)');
    await page.close();
  });
  it('retries every dead task of the dead-letter page at once, after confirming', async () => {
    await Promise.all([deadTask('bulk.a', 'x'), deadTask('bulk.b', 'y'), deadTask('bulk.c', 'z')]);
    const page = await open('/dead');
    const section = page.locator('section', { has: page.getByRole('heading', { name: 'Dead tasks' }) });
    const shown = await section.locator('tbody tr td:nth-child(2) a').allTextContents();
    expect(shown.length).toBeGreaterThanOrEqual(3);
    await section.getByLabel(`all ${shown.length} on this page`).check();
    await section.getByLabel('Reason (kept on the row)').fill('the SMTP relay is back');
    await section.getByRole('button', { name: 'Retry…' }).click();
    await page.getByRole('heading', { name: `Retry ${shown.length} dead tasks?` }).waitFor();
    await page.getByRole('button', { name: `Confirm: retry ${shown.length}` }).click();
    await page.getByRole('heading', { name: `Retried ${shown.length}` }).waitFor();
    const { rows } = await sql<{ status: string }>`SELECT status FROM leasehold.task WHERE id = ANY(${shown}::bigint[])`.execute(t.db);
    expect(rows.map((r) => r.status)).toEqual(shown.map(() => 'pending'));
    await page.close();
  });
});

describe('hostile input', () => {
  it('shows a payload, an error and a name holding markup as text, and runs none of it', async () => {
    const hostile = '<script>alert(1)</script>';
    const id = await deadTask('<img src=x onerror=alert(2)>', `<img src=x onerror=alert(3)>${hostile}`, { note: hostile, '"><svg onload=alert(4)>': 1 });
    for (const path of [`/tasks/${id}`, '/', '/tasks', '/dead']) {
      const page = await open(path);
      expect(await page.locator('main script, main img, main svg[onload]').count(), path).toBe(0);
      expect(await page.locator('script').count(), path).toBe(2); // htmx and its morph extension only
      if (path === `/tasks/${id}`) {
        expect(await page.locator('pre.json').first().textContent()).toContain(`"note": "${hostile}"`);
        expect(await page.locator('pre.error-text').textContent()).toBe(`<img src=x onerror=alert(3)>${hostile}`);
      }
      await page.close();
    }
  });

  it('refuses a mutation without the CSRF token, with a wrong one, and from another site', async () => {
    const id = await deadTask('csrf', 'x');
    const page = await open(`/tasks/${id}`);
    const token = await page.locator('form.resolve input[name=_csrf]').inputValue();
    const url = new URL('dead/confirm', dashboard.url).toString();
    const form = { table: 'task', ids: id, action: 'skip', reason: 'forged' };
    const none = await page.request.post(url, { form });
    const wrong = await page.request.post(url, { form: { ...form, _csrf: `${token.slice(0, -2)}xx` } });
    const crossSite = await page.request.post(url, { form: { ...form, _csrf: token }, headers: { origin: 'https://evil.example' } });
    expect([none.status(), wrong.status(), crossSite.status()]).toEqual([403, 403, 403]);
    expect(await none.text()).toContain('CSRF');
    // the same token from the page itself is accepted (the confirmation page, which changes nothing)
    expect((await page.request.post(url, { form: { ...form, _csrf: token } })).status()).toBe(200);
    expect((await readTask(t.db, id)).status).toBe('dead');
    await page.close();
  });
});

describe('configuration', () => {
  it('refuses to start on a non-loopback address without auth or token', async () => {
    const error = await startDashboard({ database: t.pool, host: '0.0.0.0', port: 0 }).catch((e: unknown) => e);
    expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
    expect((error as Error).message).toMatch(/Refusing to listen on 0\.0\.0\.0 without `auth` or `token`/);
  });

  it('without auth or token, refuses requests through a proxy and requests for another host name', async () => {
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpGet(dashboard.url, { headers }, (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        request.on('error', reject);
      });
    const port = new URL(dashboard.url).port;
    expect((await get({ host: `localhost:${port}` })).status).toBe(200);
    const proxied = await get({ 'x-forwarded-for': '203.0.113.9' });
    expect(proxied.status).toBe(403);
    expect(proxied.body).toContain('it does not answer requests that came through a proxy (x-forwarded-for)');
    // a page on evil.example whose name now resolves to 127.0.0.1: its requests carry its own Host
    const rebound = await get({ host: `evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain('answers requests for localhost or a loopback address only');
  });

  it('read-only: shows a dead task without retry / skip, and refuses a POST with a valid token', async () => {
    const id = await deadTask('readonly', 'x');
    const page = await open(`/tasks/${id}`, readOnly.url);
    expect(await page.getByRole('button', { name: 'Retry…' }).count()).toBe(0);
    expect(await page.getByText('read-only', { exact: true }).count()).toBe(1);
    const dead = await open('/dead', readOnly.url);
    const token = await dead.evaluate('document.cookie'); // HttpOnly: invisible to scripts
    expect(token).toBe('');
    await dead.close();
    await page.close();
  });

  it('is usable by keyboard: the first Tab reaches the skip link, and every form field has a label', async () => {
    const page = await open('/tasks');
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').textContent()).toBe('Skip to content');
    // evaluated in the page (a string: the tests are compiled without the DOM's types)
    const unlabelled = await page.evaluate(`[...document.querySelectorAll('input:not([type=hidden]), select')]
      .filter((e) => e.labels?.length === 0 && !e.getAttribute('aria-label'))
      .map((e) => e.outerHTML)`);
    expect(unlabelled).toEqual([]);
    await page.close();
  });
});
