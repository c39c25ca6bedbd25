import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createOutbox } from '@leasehold/outbox';
import { insertTasks, useTestDatabase } from '../fixtures.js';
import { cliEnv, exited, outputContains, runCli, startCli } from './run-cli.js';
import { allMigrations } from '../migration-lines.js';

const t = useTestDatabase();
let env: NodeJS.ProcessEnv;
beforeAll(() => void (env = cliEnv({ DATABASE_URL: t.url })));

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

describe('leasehold CLI: the command line', () => {
  it('refuses a wrong command line with exit code 2 and says what to do', async () => {
    const none = await runCli([], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no command given');
    const unknown = await runCli(['stats', '--frobnicate'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/frobnicate/);
    const noDatabase = await runCli(['stats'], cliEnv());
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toContain('no database: set DATABASE_URL');
    const help = await runCli(['--help'], cliEnv());
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
  });

  it('reports an unreachable server, a missing database and an unmigrated schema with exit code 1', async () => {
    const refused = await runCli(['stats', '--database-url', 'postgres://postgres:secret@127.0.0.1:1/x'], cliEnv());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('connection refused');
    expect(refused.stderr).not.toContain('secret'); // the password is never echoed
    const missing = await runCli(['stats', '--database-url', `${t.url}_nope`], cliEnv());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('the database does not exist');
    const unmigrated = await runCli(['stats', '--schema', 'not_migrated'], env);
    expect(unmigrated.code).toBe(1);
    expect(unmigrated.stderr).toContain('schema "not_migrated" does not exist');
    expect(unmigrated.stderr).toContain('run "leasehold migrate"');
  });
});

describe('leasehold CLI: operations', () => {
  it('migrate creates the tables in a new schema once, then reports it up to date', async () => {
    const first = await runCli(['migrate', '--schema', 'cli_fresh', '--json'], env);
    expect(first.code).toBe(0);
    expect(json(first.stdout)).toEqual({ schema: 'cli_fresh', applied: allMigrations('core', 'outbox') });
    const again = await runCli(['migrate', '--schema', 'cli_fresh'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('schema "cli_fresh" is up to date');
  });

  it('stats counts by status per queue, with expired leases and the oldest pending age', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.outbox`.execute(t.db);
    await insertTasks(t.db, 2, { name: 'email' });
    await insertTasks(t.db, 1, { name: 'email', status: 'processing', attempts: 1, leaseUntilOffsetMs: -1_000 });
    await insertTasks(t.db, 1, { name: 'resize', status: 'dead', attempts: 3 });
    await sql`UPDATE leasehold.task SET created_at = now() - interval '1 hour', available_at = now() - interval '1 hour'
              WHERE name = 'email' AND status = 'pending'`.execute(t.db);
    await createOutbox().add(t.pool, { aggregateType: 'order', aggregateId: 1, eventType: 'OrderPlaced', payload: {} });

    const result = await runCli(['stats', '--json'], env);
    expect(result.code).toBe(0);
    const report = json(result.stdout) as { tables: Array<{ table: string; queues: Array<Record<string, unknown>> }> };
    const task = report.tables.find((x) => x.table === 'task')!;
    expect(task.queues.find((q) => q.name === 'email')).toMatchObject({ pending: 2, processing: 1, done: 0, dead: 0, expiredLeases: 1 });
    expect(task.queues.find((q) => q.name === 'email')!.oldestPendingAgeMs).toBeGreaterThanOrEqual(3_600_000);
    expect(task.queues.find((q) => q.name === 'resize')).toMatchObject({ dead: 1, oldestPendingAgeMs: null });
    expect(report.tables.find((x) => x.table === 'outbox')!.queues).toMatchObject([{ name: 'OrderPlaced', pending: 1 }]);

    const text = await runCli(['stats'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^TABLE\s+QUEUE\s+PENDING\s+PROCESSING\s+DONE\s+DEAD\s+OLDEST PENDING\s+EXPIRED LEASES$/m);
    expect(text.stdout).toMatch(/^task\s+email\s+2\s+1\s+0\s+0\s+1h \d\dm\s+1$/m);
  });

  it('dead list shows dead rows of both tables; retry and skip are all or nothing', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.outbox`.execute(t.db);
    const [deadTask] = await insertTasks(t.db, 1, { name: 'email', status: 'dead', attempts: 12 });
    const [doneTask] = await insertTasks(t.db, 1, { name: 'email', status: 'done' });
    const outbox = createOutbox();
    const deadMessage = await outbox.add(t.pool, { aggregateType: 'order', aggregateId: 7, eventType: 'OrderPaid', payload: {} });
    await sql`UPDATE leasehold.outbox SET status = 'dead', attempts = 3, last_error = 'HTTP 400 Bad Request' WHERE id = ${deadMessage}`.execute(t.db);
    await sql`UPDATE leasehold.task SET last_error = 'retries exhausted: SMTP 451' WHERE id = ${deadTask}`.execute(t.db);

    const list = await runCli(['dead', 'list', '--json'], env);
    expect(list.code).toBe(0);
    expect((json(list.stdout).dead as Array<{ ref: string; lastError: string }>).map((d) => [d.ref, d.lastError])).toEqual([
      [`task:${deadTask}`, 'retries exhausted: SMTP 451'],
      [`outbox:${deadMessage}`, 'HTTP 400 Bad Request'],
    ]);

    // one id that is not dead and one that does not exist: nothing changes, exit code 1
    const refused = await runCli(['dead', 'retry', `task:${deadTask}`, `task:${doneTask}`, 'outbox:999999'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`task:${doneTask} is not dead (it is done)`);
    expect(refused.stderr).toContain('outbox:999999 does not exist');
    expect(await statusOf('task', deadTask!)).toBe('dead');

    const ambiguous = await runCli(['dead', 'retry', deadTask!], env);
    expect(ambiguous.code).toBe(2);

    const retried = await runCli(['dead', 'retry', `task:${deadTask}`, '--reason', 'SMTP fixed'], env);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain(`retried 1 dead row(s): task:${deadTask}`);
    // the decision goes to the resolution column, as on the outbox; last_error keeps why it died
    const { rows } = await sql<{ status: string; attempts: number; last_error: string; resolution: string; resolved: boolean }>`
      SELECT status, attempts, last_error, resolution, resolved_at IS NOT NULL AS resolved FROM leasehold.task WHERE id = ${deadTask}`.execute(t.db);
    expect(rows[0]).toEqual({
      status: 'pending', attempts: 0, last_error: 'retries exhausted: SMTP 451', resolution: 'retried: SMTP fixed', resolved: true,
    });

    const skipped = await runCli(['dead', 'skip', deadMessage, '--table', 'outbox', '--json'], env);
    expect(skipped.code).toBe(0);
    expect(json(skipped.stdout)).toEqual({ action: 'skip', changed: [`outbox:${deadMessage}`], rejected: [] });
    expect(await statusOf('outbox', deadMessage)).toBe('done');
  });

  it('dead retry --all retries every dead row', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.outbox`.execute(t.db);
    const ids = await insertTasks(t.db, 3, { status: 'dead', attempts: 5 });
    const result = await runCli(['dead', 'retry', '--all', '--json'], env);
    expect(result.code).toBe(0);
    expect(json(result.stdout).changed).toEqual(ids.map((id) => `task:${id}`));
    expect(await Promise.all(ids.map((id) => statusOf('task', id)))).toEqual(['pending', 'pending', 'pending']);
  });

  it('purge deletes only done rows older than --older-than', async () => {
    await sql`TRUNCATE leasehold.task, leasehold.outbox`.execute(t.db);
    const [old, recent] = await insertTasks(t.db, 2, { status: 'done' });
    const [deadOld] = await insertTasks(t.db, 1, { status: 'dead' });
    await sql`UPDATE leasehold.task SET done_at = now() - interval '8 days' WHERE id IN (${old}, ${deadOld})`.execute(t.db);
    await sql`UPDATE leasehold.task SET done_at = now() - interval '1 day' WHERE id = ${recent}`.execute(t.db);
    const result = await runCli(['purge', '--older-than', '7d', '--json'], env);
    expect(result.code).toBe(0);
    expect(json(result.stdout).deleted).toEqual({ task: 1, outbox: 0 });
    const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task ORDER BY id`.execute(t.db);
    expect(rows.map((r) => String(r.id))).toEqual([recent, deadOld]);
  });

  it('watch refreshes until SIGINT, then exits 0', async () => {
    const child = startCli(['watch', '--json', '--interval', '200ms'], env);
    await outputContains(child, '"tables"');
    child.kill('SIGINT');
    const result = await exited(child);
    expect(result.code).toBe(0);
    const first = JSON.parse(result.stdout.split('\n')[0]!) as { schema: string; at: string };
    expect(first.schema).toBe('leasehold');
  });
});

async function statusOf(table: 'task' | 'outbox', id: string): Promise<string | undefined> {
  const { rows } = await sql<{ status: string }>`SELECT status FROM ${sql.id('leasehold', table)} WHERE id = ${id}`.execute(t.db);
  return rows[0]?.status;
}
