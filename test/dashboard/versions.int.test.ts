// The dashboard's workflow versions page and a dead run's replay failure (issue 31), over rows
// seeded as the versioned runtime writes them; read as HTML over HTTP (no browser needed: the
// pages have no script of their own), with hostile names and errors escaped.
import { startDashboard, type RunningDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';
import { seedRun, seedWorker } from '../workflows/version-seed.js';

const t = useTestDatabase();
let dashboard: RunningDashboard;
const HOSTILE = '<img src=x onerror=alert(1)>';

beforeAll(async () => {
  dashboard = await startDashboard({ database: t.pool, port: 0 });
});

afterAll(async () => {
  await dashboard?.close();
});

async function page(path: string): Promise<string> {
  const response = await fetch(new URL(path.replace(/^\//, ''), dashboard.url));
  expect(response.status, path).toBe(200);
  return response.text();
}

/** The `<tr>` of the versions table whose row header is `name` at `version`. */
function versionRow(html: string, name: string, version: number): string {
  const rows = html.match(/<tr[^>]*>\s*<th scope="row">[\s\S]*?<\/tr>/g) ?? [];
  const row = rows.find((r) => r.includes(`>${name}</a></th><td class="num">${version}</td>`));
  if (row === undefined) throw new Error(`no row for ${name} version ${version} in:\n${rows.join('\n')}`);
  return row;
}

describe('the versions page', () => {
  it('says which runs can be claimed is unknown while no worker reports its versions', async () => {
    await seedRun(t.db, { name: 'order', version: 1, status: 'waiting', createdAgoMs: 3_600_000 });
    const html = await page('/versions');
    expect(versionRow(html, 'order', 1)).toContain('unknown');
    expect(html).toContain('No live worker reports the versions it accepts');
    expect(html).not.toContain('Needs attention');
  });

  it('highlights a version no live worker accepts, counts replay failures, and escapes names', async () => {
    await seedRun(t.db, { name: 'order', version: 2 });
    await seedRun(t.db, { name: HOSTILE, version: 1 });
    await seedWorker(t.db, 'worker-b', { order: [2], [HOSTILE]: [1] });
    const id = await seedRun(t.db, { name: 'order', version: 1, status: 'dead', lastError: 'placeholder' });
    await sql`UPDATE leasehold.task SET last_error = ${`NonDeterminismError: run ${id} at position 1 recorded step "<script>alert(1)</script>" but the code asked for sleep "cool-off"\n    at check`} WHERE id = ${id}`.execute(t.db);

    const html = await page('/versions');
    const stuck = versionRow(html, 'order', 1);
    expect(stuck).toMatch(/^<tr class="has-dead">/);
    expect(stuck).toContain('<span class="status status-dead">no live worker accepts this version</span>');
    expect(stuck).toContain('href="/tasks?name=order&amp;status=dead">1</a>'); // failed replay, linked to the dead list
    const fine = versionRow(html, 'order', 2);
    expect(fine).not.toContain('has-dead');
    expect(fine).toMatch(/<td>1<\/td>\s*<\/tr>$/);
    expect(html).toContain('<h2 id="s-attention">Needs attention</h2>');
    expect(html).toContain('<strong>order</strong> version 1: no live worker accepts this version; 1 run waits for one that does.');
    expect(html).toContain('1 dead run failed replay');
    expect(html).toContain('<th scope="row">worker-b</th>');
    expect(html).not.toContain(HOSTILE);
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');

    // the overview links to it
    expect(await page('/')).toContain('<a href="/versions">Versions</a>');
  });

  it('says so when no live worker runs a task name at all (issue 34: its runs waited without a word)', async () => {
    await seedRun(t.db, { name: 'welcome-mial' });
    const html = await page('/versions');
    expect(versionRow(html, 'welcome-mial', 1)).toContain('<span class="status status-dead">no live worker runs this task</span>');
    expect(html).toContain('<strong>welcome-mial</strong>: no live worker runs this task; 1 run waits for a worker with it among its tasks (not deployed, or the name misspelt?).');
    // a version no worker accepts, of a name a worker runs, keeps its own words
    expect(versionRow(html, 'order', 1)).toContain('no live worker accepts this version');
  });

  it('shows on a dead run\'s page that it failed replay, why, and what brings it back', async () => {
    const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task WHERE status = 'dead' AND last_error LIKE 'NonDeterminismError:%'`.execute(t.db);
    const html = await page(`/tasks/${rows[0]!.id}`);
    expect(html).toContain('<h2 id="s-replay">Replay failed: the code changed under this run</h2>');
    expect(html).toContain(`<pre class="error-text">run ${rows[0]!.id} at position 1 recorded step &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot; but the code asked for sleep &quot;cool-off&quot;</pre>`);
    expect(html).toContain('then retry it: it resumes from its recorded steps');
    expect(html).not.toContain('<script>alert(1)</script>');
    // another dead run's page has no such section
    const other = await seedRun(t.db, { name: 'order', status: 'dead', lastError: 'Error: carrier down' });
    expect(await page(`/tasks/${other}`)).not.toContain('s-replay');
  });
});
