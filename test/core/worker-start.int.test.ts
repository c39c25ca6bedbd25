// start() checks the database before it claims (issue #12 item 4): each way the database can be
// unusable is its own DatabaseNotReadyError, within 5 s, saying what to do; the worker can be
// started again once that is done.
import { createServer } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWorker,
  DatabaseNotReadyError,
  isLeaseholdError,
  defineTask,
  migrate,
  type DatabaseNotReadyReason,
} from '@leasehold/core';
import { applyMigrationLine, CORE_MIGRATION_LINE } from '@leasehold/core/internal';
import { createDispatcher } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const noop = defineTask<object>('start-check', { handler: async () => {} });

const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => undefined)));
});

function pool(connectionString: string): pg.Pool {
  const p = new pg.Pool({ connectionString, max: 2 });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

/** Sessions of this test database that LISTEN on the `never_migrated` schema's channel (or last did). */
async function listenSessions(): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN "leasehold:never_migrated.%'`,
  );
  return rows[0]!.n;
}

/** A URL on a port nothing listens on. */
async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const url = new URL(t.url);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
}

/** Starts `start` and expects a DatabaseNotReadyError of `reason` within 5 s, whose message matches `words`. */
async function expectRefusal(start: () => Promise<void>, reason: DatabaseNotReadyReason, words: RegExp): Promise<DatabaseNotReadyError> {
  const began = performance.now();
  const error = await start().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(performance.now() - began).toBeLessThan(5_000);
  expect(error).toBeInstanceOf(DatabaseNotReadyError);
  const refusal = error as DatabaseNotReadyError;
  expect({ reason: refusal.reason, code: refusal.code }).toEqual({ reason, code: 'DATABASE_NOT_READY' });
  expect(isLeaseholdError(error, 'DATABASE_NOT_READY')).toBe(true);
  expect(refusal.message).toMatch(words);
  return refusal;
}

const MIGRATE = /run "leasehold migrate" or call migrate\(\)/;

describe('start() checks the database first', () => {
  it('a wrong URL (nothing listening): unreachable, "connection refused", and no worker:started', async () => {
    const url = await refusingUrl();
    // never started: not tracked (a worker that did not start emits no worker:stopped)
    const worker = createWorker({ pool: pool(url), tasks: [noop], logger: null });
    let started = false;
    const errors: Error[] = [];
    worker.on('worker:started', () => (started = true));
    // the LISTEN connection is opened during the check: its refusal is not a second report
    worker.on('worker:error', ({ error }) => errors.push(error));
    const error = await expectRefusal(() => worker.start(), 'unreachable', /^cannot use postgres:\/\/.*: connection refused \(is PostgreSQL running on that host and port\?\) \[ECONNREFUSED\]$/);
    expect(error.cause).toBeInstanceOf(Error);
    expect(started).toBe(false);
    expect(errors).toEqual([]);
    await worker.stop();
  });

  it('a database that does not exist: no-database, "create it, or fix the name in the URL"', async () => {
    const url = new URL(t.url);
    url.pathname = '/no_such_database_here';
    const worker = createWorker({ pool: pool(url.toString()), tasks: [noop], logger: null });
    await expectRefusal(() => worker.start(), 'no-database', /the database does not exist \(create it, or fix the name in the URL\) \[3D000\]/);
    await worker.stop();
  });

  it('an unmigrated schema: not-migrated, with the migrate hint; after migrate() the same worker starts', async () => {
    const worker = track(createWorker({ pool: t.pool, tasks: [noop], schema: 'never_migrated', logger: null }));
    await expectRefusal(() => worker.start(), 'not-migrated', /^schema "never_migrated" is not migrated \(it does not exist\) in .*: run "leasehold migrate"/);
    // the LISTEN connection the start opened meanwhile is closed with it
    await expect.poll(listenSessions, { timeout: 10_000 }).toBe(0);
    await migrate(t.pool, { schema: 'never_migrated' });
    const started = nextEvent(worker, 'worker:started');
    await worker.start();
    await started;
    await worker.stop();
  });

  it('an older schema version: schema-outdated, naming the line and both versions', async () => {
    const older = CORE_MIGRATION_LINE.migrations.slice(0, -1);
    const latest = CORE_MIGRATION_LINE.migrations.at(-1)!.version;
    await applyMigrationLine(t.pool, { line: 'core', migrations: older }, { schema: 'lh_older' });
    const worker = createWorker({ pool: t.pool, tasks: [noop], schema: 'lh_older', logger: null });
    await expectRefusal(
      () => worker.start(),
      'schema-outdated',
      new RegExp(`migration line "core" at version ${latest - 1}, needs ${latest}\\).*${MIGRATE.source}`),
    );
    await worker.stop();
  });

  it('the dispatcher: a wrong URL, and a schema with core but no outbox', async () => {
    const publisher = { publish: async () => {} };
    const refused = createDispatcher({ pool: pool(await refusingUrl()), publisher, logger: null });
    await expectRefusal(() => refused.start(), 'unreachable', /connection refused/);
    await refused.stop();
    await migrate(t.pool, { schema: 'core_only' });
    const unmigrated = createDispatcher({ pool: t.pool, publisher, schema: 'core_only', logger: null });
    await expectRefusal(() => unmigrated.start(), 'not-migrated', /schema "core_only" is not migrated \(it has no table "outbox"\)/);
    await unmigrated.stop();
  });
});
