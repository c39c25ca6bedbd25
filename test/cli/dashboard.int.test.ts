// `leasehold dashboard` as a user starts it: a process of its own against DATABASE_URL (or a
// throwaway server), serving the web dashboard until Ctrl-C.
import { rmSync } from 'node:fs';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { privateTmpdir, serverLeftovers } from '../examples/processes.js';
import { insertTasks, useTestDatabase } from '../fixtures.js';
import { cliEnv, exited, outputContains, runCli, startCli } from './run-cli.js';

const t = useTestDatabase();
let env: NodeJS.ProcessEnv;
beforeAll(() => void (env = cliEnv({ DATABASE_URL: t.url })));

const TOKEN = 'a-token-of-twenty-four-ch';

/** Starts `leasehold dashboard …` and resolves with the process and the URL it printed. */
async function startDashboardCli(args: readonly string[], environment: NodeJS.ProcessEnv, options: { detached?: boolean } = {}) {
  const child = startCli(['dashboard', '--port', '0', ...args], environment, options);
  await outputContains(child, 'http://'); // one line, written at once: as text or as JSON
  const url = /(http:\/\/[^\s"]+\/)/.exec(child.output.stdout)?.[1];
  expect(url, child.output.stdout).toBeDefined();
  return { child, url: url! };
}

describe('leasehold dashboard', () => {
  it('serves the overview and the lists on 127.0.0.1 from DATABASE_URL, and exits 0 on Ctrl-C', async () => {
    await insertTasks(t.db, 3, { name: 'cli.mail' });
    const [dead] = await insertTasks(t.db, 1, { name: 'cli.mail', status: 'dead', attempts: 3, maxAttempts: 3 });
    await sql`UPDATE leasehold.task SET last_error = 'SMTP 550' WHERE id = ${dead}::bigint`.execute(t.db);
    const { child, url } = await startDashboardCli([], env);
    expect(new URL(url).hostname).toBe('127.0.0.1');
    const overview = await fetch(url);
    expect(overview.status).toBe(200);
    const html = await overview.text();
    expect(html).toContain('<h1>Overview</h1>');
    expect(html).toContain('cli.mail');
    const list = await fetch(new URL('tasks?status=dead&name=cli.mail', url));
    expect(await list.text()).toContain(`>${dead}</a>`);
    const page = await (await fetch(new URL(`tasks/${dead!}`, url))).text();
    expect(page).toContain('SMTP 550');
    expect(page).toContain('Retry…');
    child.kill('SIGINT');
    const result = await exited(child);
    expect(result.code, result.stderr).toBe(0);
    await expect(fetch(url)).rejects.toThrow(); // nothing listens any more
  });

  it('--read-only shows dead rows without retry / skip and refuses every POST', async () => {
    const [dead] = await insertTasks(t.db, 1, { name: 'cli.readonly', status: 'dead' });
    const { child, url } = await startDashboardCli(['--read-only'], env);
    expect(child.output.stdout).toContain('(read-only)');
    const page = await (await fetch(new URL(`tasks/${dead!}`, url))).text();
    expect(page).not.toContain('Retry…');
    expect(page).toContain('read-only');
    const post = await fetch(new URL('dead/confirm', url), { method: 'POST', body: new URLSearchParams({ table: 'task', ids: dead!, action: 'retry', reason: 'x' }) });
    expect(post.status).toBe(403);
    child.kill('SIGINT');
    expect((await exited(child)).code).toBe(0);
  });

  it('refuses a non-loopback --host without a token (exit 2), and serves it with one', async () => {
    const refused = await runCli(['dashboard', '--port', '0', '--host', '0.0.0.0'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('refusing to listen on 0.0.0.0 without a token');
    // the token from the environment, where the process list does not show it
    const { child, url } = await startDashboardCli(['--host', '0.0.0.0', '--json'], { ...env, LEASEHOLD_DASHBOARD_TOKEN: TOKEN });
    expect(JSON.parse(child.output.stdout.trim())).toMatchObject({ readOnly: false, token: true });
    const local = url.replace('0.0.0.0', '127.0.0.1');
    const anonymous = await fetch(local, { redirect: 'manual' });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/login');
    const bearer = await fetch(local, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(200);
    expect(await bearer.text()).toContain('<h1>Overview</h1>');
    child.kill('SIGINT');
    expect((await exited(child)).code).toBe(0);
  });

  it('refuses wrong options with exit code 2', async () => {
    const port = await runCli(['dashboard', '--port', 'eighty'], env);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('--port must be a whole number');
    const token = await runCli(['dashboard', '--token', 'short'], env);
    expect(token.code).toBe(2);
    expect(token.stderr).toContain('--token must be at least 16 characters');
    const misplaced = await runCli(['stats', '--read-only'], env);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('--read-only does not apply to "leasehold stats"');
  });

  it('--embedded: serves a throwaway, migrated server and removes it on Ctrl-C', async () => {
    const tmp = privateTmpdir();
    try {
      const { child, url } = await startDashboardCli(['--embedded'], cliEnv({ TMPDIR: tmp }), { detached: true });
      const overview = await fetch(url);
      expect(overview.status).toBe(200);
      expect(await overview.text()).toContain('<h2 id="h-task">Tasks</h2>');
      // Ctrl-C: SIGINT to the whole process group, the CLI and its PostgreSQL server alike
      process.kill(-child.pid!, 'SIGINT');
      const result = await exited(child);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('stopped and removed the throwaway PostgreSQL');
      expect(serverLeftovers(tmp)).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
