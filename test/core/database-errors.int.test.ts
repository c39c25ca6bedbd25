// Issue 34 item 6: every public call that reaches an unusable database throws the same coded
// DatabaseNotReadyError a worker's start() does (with a reason, the driver's error as its cause),
// never the driver's raw error (`relation "leasehold.task" does not exist`), and stores nothing.
import { createServer } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cancelTask,
  DatabaseNotReadyError,
  defineSignal,
  defineTask,
  enqueue,
  enqueueMany,
  getTask,
  isLeaseholdError,
  leaseDeadList,
  migrate,
  sendSignal,
  taskTable,
  waitForResult,
  withTransaction,
  type DatabaseNotReadyReason,
} from '@leasehold/core';
import { createOutbox } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const email = defineTask<{ to: string }>('db-errors-email', { handler: async () => {} });
const approved = defineSignal<{ by: string }>('db-errors-approved');

const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => undefined)));
});

function pool(url: string | URL): pg.Pool {
  const p = new pg.Pool({ connectionString: url.toString(), max: 2 });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

/** This test database's URL with one part changed. */
function urlWith(change: (url: URL) => void): URL {
  const url = new URL(t.url);
  change(url);
  return url;
}

/** A URL on a port nothing listens on. */
async function refusingUrl(): Promise<URL> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return urlWith((url) => {
    url.hostname = '127.0.0.1';
    url.port = String(port);
  });
}

/** Expects `call` to reject with a DatabaseNotReadyError of `reason`, the driver's `driverCode`, whose message matches `words`. */
async function expectNotReady(call: Promise<unknown>, reason: DatabaseNotReadyReason, driverCode: string, words: RegExp): Promise<DatabaseNotReadyError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DatabaseNotReadyError);
  const e = error as DatabaseNotReadyError;
  expect({ code: e.code, reason: e.reason, driverCode: e.driverCode }).toEqual({ code: 'DATABASE_NOT_READY', reason, driverCode });
  expect(isLeaseholdError(error, 'DATABASE_NOT_READY')).toBe(true);
  expect(e.cause).toMatchObject({ code: driverCode }); // the driver's own error, kept
  expect(e.message).toMatch(words);
  return e;
}

const NOT_MIGRATED = /run "leasehold migrate" or call migrate\(\) \[42P01\]$/;

async function schemaExists(name: string): Promise<boolean> {
  const { rows } = await t.pool.query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS found', [name]);
  return rows[0]!.found;
}

async function taskCount(): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leasehold.task');
  return rows[0]!.n;
}

describe('an unmigrated schema: not-migrated, naming the missing table, nothing stored', () => {
  const schema = { schema: 'never_made' };

  it('enqueue (a pool, shared statements) and enqueueMany', async () => {
    const error = await expectNotReady(enqueue(t.pool, email, { to: 'a@example.com' }, schema), 'not-migrated', '42P01', NOT_MIGRATED);
    expect(error.message).toContain('relation "never_made.task" does not exist');
    expect(error.message).toMatch(/^cannot use postgres:\/\//); // the pool's URL names the database
    await expectNotReady(enqueue(t.pool, email, { to: 'a@example.com' }, { ...schema, dedupKey: 'k' }), 'not-migrated', '42P01', NOT_MIGRATED);
    await expectNotReady(enqueueMany(t.pool, email, [{ payload: { to: 'a' } }, { payload: { to: 'b' } }], schema), 'not-migrated', '42P01', NOT_MIGRATED);
    expect(await schemaExists('never_made')).toBe(false);
  });

  it('getTask, cancelTask, sendSignal, waitForResult, leaseDeadList', async () => {
    await expectNotReady(getTask(t.pool, '1', schema), 'not-migrated', '42P01', NOT_MIGRATED);
    await expectNotReady(cancelTask(t.pool, '1', schema), 'not-migrated', '42P01', NOT_MIGRATED);
    await expectNotReady(sendSignal(t.pool, '1', approved, { by: 'ann' }, schema), 'not-migrated', '42P01', NOT_MIGRATED);
    await expectNotReady(waitForResult(t.pool, '1', { ...schema, timeout: '5s' }), 'not-migrated', '42P01', NOT_MIGRATED);
    await expectNotReady(leaseDeadList(t.pool, taskTable('never_made'), { limit: 10, afterId: null }), 'not-migrated', '42P01', NOT_MIGRATED);
    expect(await schemaExists('never_made')).toBe(false);
  });

  it("the outbox's add", async () => {
    await expectNotReady(
      createOutbox({ schema: 'never_made' }).add(t.pool, { aggregateType: 'order', aggregateId: 1, eventType: 'OrderPaid', payload: {} }),
      'not-migrated',
      '42P01',
      /relation "never_made\.outbox" does not exist/,
    );
    expect(await schemaExists('never_made')).toBe(false);
  });

  it("inside the caller's transaction (Kysely, and a pg client after BEGIN) it aborts that transaction, as the raw error did", async () => {
    await sql`CREATE TABLE IF NOT EXISTS app_order (id int PRIMARY KEY)`.execute(t.db);
    await expectNotReady(
      t.db.transaction().execute(async (trx) => {
        await sql`INSERT INTO app_order VALUES (1)`.execute(trx);
        await enqueue(trx, email, { to: 'a@example.com' }, schema);
      }),
      'not-migrated',
      '42P01',
      /^cannot use the database: relation "never_made\.task" does not exist/,
    );
    const client = await t.client();
    await client.query('BEGIN');
    await client.query('INSERT INTO app_order VALUES (2)');
    await expectNotReady(enqueue(client, email, { to: 'a@example.com' }, schema), 'not-migrated', '42P01', NOT_MIGRATED);
    // the transaction is aborted: PostgreSQL refuses the next statement until ROLLBACK
    await expect(client.query('SELECT 1')).rejects.toMatchObject({ code: '25P02' });
    await client.query('ROLLBACK');
    expect((await t.pool.query('SELECT id FROM app_order')).rows).toEqual([]);
  });
});

describe('a wrong database, user or host: the reason start() gives, nothing stored', () => {
  it('a database that does not exist: no-database (enqueue and migrate)', async () => {
    const p = pool(urlWith((url) => (url.pathname = '/no_such_database_here')));
    const words = /the database does not exist \(create it, or fix the name in the URL\) \[3D000\]$/;
    await expectNotReady(enqueue(p, email, { to: 'a@example.com' }), 'no-database', '3D000', words);
    await expectNotReady(migrate(p), 'no-database', '3D000', words);
  });

  it('a user that does not exist: login-refused (enqueue, enqueueMany, migrate)', async () => {
    const p = pool(urlWith((url) => (url.username = 'no_such_user_here')));
    // trust authentication says the role does not exist (28000); password authentication does
    // not tell, and refuses the password (28P01)
    const code = await p.query('SELECT 1').catch((e: { code?: string }) => e.code);
    expect(code === '28000' || code === '28P01', `SQLSTATE ${String(code)}`).toBe(true);
    const words = code === '28000' ? /the server refused this user \(check pg_hba\.conf and the user name\) \[28000\]$/ : /password authentication failed \[28P01\]$/;
    await expectNotReady(enqueue(p, email, { to: 'a@example.com' }), 'login-refused', code as string, words);
    await expectNotReady(enqueueMany(p, email, [{ payload: { to: 'a' } }, { payload: { to: 'b' } }]), 'login-refused', code as string, words);
    await expectNotReady(migrate(p, { schema: 'never_made' }), 'login-refused', code as string, words);
    expect(await schemaExists('never_made')).toBe(false);
  });

  it('nothing listening: unreachable (enqueue, getTask, migrate), the password never in the message', async () => {
    const url = await refusingUrl();
    url.password = 'secret';
    const p = pool(url);
    const words = /connection refused \(is PostgreSQL running on that host and port\?\) \[ECONNREFUSED\]$/;
    const before = await taskCount();
    const error = await expectNotReady(enqueue(p, email, { to: 'a@example.com' }), 'unreachable', 'ECONNREFUSED', words);
    expect(error.message).not.toContain('secret');
    await expectNotReady(getTask(p, '1'), 'unreachable', 'ECONNREFUSED', words);
    await expectNotReady(migrate(p), 'unreachable', 'ECONNREFUSED', words);
    expect(await taskCount()).toBe(before);
  });

  it('a host name that does not resolve: unreachable', async () => {
    const p = pool(urlWith((url) => (url.hostname = 'no-such-host.invalid')));
    const error = await enqueue(p, email, { to: 'a@example.com' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseNotReadyError);
    // NXDOMAIN, or a resolver that cannot answer at all (a machine without DNS)
    expect(error).toMatchObject({ code: 'DATABASE_NOT_READY', reason: 'unreachable', driverCode: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN)$/) });
    expect((error as Error).message).toMatch(/(unknown host \[ENOTFOUND\]|host name lookup failed \[EAI_AGAIN\])$/);
  });
});

describe('the faults it does not explain stay what they were', () => {
  it("a statement of leasehold's refused for another reason keeps the driver's error (a read-only transaction)", async () => {
    const client = await t.client();
    await client.query('BEGIN READ ONLY');
    const error = await enqueue(client, email, { to: 'a@example.com' }).catch((e: unknown) => e);
    await client.query('ROLLBACK');
    expect(error).not.toBeInstanceOf(DatabaseNotReadyError);
    expect(error).toMatchObject({ code: '25006' }); // read_only_sql_transaction
  });

  it("the caller's own statement on a missing table of its own, inside withTransaction (Kysely and a pg pool), keeps the driver's error", async () => {
    const missing = sql`SELECT 1 FROM app_orders_missing`;
    const errors = [
      await t.db.transaction().execute(async (trx) => missing.execute(trx)).catch((e: unknown) => e),
      await withTransaction(t.db, async () => {
        await missing.execute(t.db);
      }).catch((e: unknown) => e),
      await withTransaction(t.pool, async () => {
        await t.pool.query('SELECT 1 FROM app_orders_missing');
      }).catch((e: unknown) => e),
    ];
    for (const error of errors) {
      expect(error).not.toBeInstanceOf(DatabaseNotReadyError);
      expect(error).toMatchObject({ code: '42P01' });
    }
  });
});
