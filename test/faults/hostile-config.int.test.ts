// Hostile settings at every entry point: each is a ConfigError naming the option, thrown before
// anything touches the database (the executors and pools here fail the test if SQL runs).
import { describe, expect, it } from 'vitest';
import {
  claim,
  ConfigError,
  createLeaseWorker,
  createWorker,
  DeferError,
  defineLeasedTable,
  defineTask,
  dispatchOnce,
  enqueue,
  enqueueMany,
  extendLease,
  isLeaseholdError,
  markDead,
  markDone,
  migrate,
  reschedule,
  taskTable,
  type PgPoolLike,
} from '@leasehold/core';
import { applyMigrationLine } from '@leasehold/core/internal';

const noSql: PgPoolLike = {
  query: async () => {
    throw new Error('SQL ran');
  },
  connect: async () => {
    throw new Error('connected');
  },
};
const token = { id: '1', leaseVersion: 1 };
const task = defineTask<object>('hostile', { handler: async () => {} });
const handle = async () => {};

/** Asserts `run` throws or rejects with a ConfigError naming `option` (and so ran no SQL). */
async function expectConfigError(run: () => unknown, option: string, value?: unknown): Promise<void> {
  const error = await (async () => run())().then(
    () => undefined,
    (e: unknown) => e,
  );
  const label = `\`${option}\` = ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
  expect(error, `expected a ConfigError for ${label}`).toBeInstanceOf(ConfigError);
  expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
  expect((error as ConfigError).option, label).toBe(option);
  expect((error as Error).message.length, label).toBeGreaterThan(0);
}

const HOSTILE_SCHEMAS: unknown[] = [
  'x"; DROP TABLE leasehold.task; --',
  'a;b',
  "a'b",
  'Upper',
  'LEASEHOLD',
  '1abc',
  '',
  ' ',
  'a-b',
  'a b',
  'a.b',
  'ünïcode',
  'x'.repeat(49),
  42,
];

// every call that takes a schema name, each given `schema`
const SCHEMA_ENTRY_POINTS: [string, (schema: never) => unknown][] = [
  ['migrate', (schema) => migrate(noSql, { schema })],
  ['applyMigrationLine', (schema) => applyMigrationLine(noSql, { line: 'x', migrations: [] }, { schema })],
  ['claim', (schema) => claim(noSql, { owner: 'w', batch: 1, lease: '1s', schema })],
  ['markDone', (schema) => markDone(noSql, token, { schema })],
  ['markDead', (schema) => markDead(noSql, token, { schema, error: 'x' })],
  ['reschedule', (schema) => reschedule(noSql, token, { schema, delay: 0, error: 'x' })],
  ['extendLease', (schema) => extendLease(noSql, token, { schema, lease: '1s' })],
  ['dispatchOnce', (schema) => dispatchOnce(noSql, handle, { owner: 'w', schema })],
  ['taskTable', (schema) => taskTable(schema)],
  ['enqueue', (schema) => enqueue(noSql, task, {}, { schema })],
  ['enqueueMany', (schema) => enqueueMany(noSql, task, [{ payload: {} }], { schema })],
  ['createWorker', (schema) => createWorker({ pool: noSql, tasks: [task], schema })],
];

describe('hostile schema and table names', () => {
  for (const [entry, call] of SCHEMA_ENTRY_POINTS) {
    it(`${entry} refuses quoted, injected, upper-case, too long and non-string schema names`, async () => {
      for (const schema of HOSTILE_SCHEMAS) await expectConfigError(() => call(schema as never), 'schema', schema);
    });
  }

  it('defineLeasedTable refuses hostile schema, table, name column and extra columns', async () => {
    const ok = { schema: 'app', table: 'jobs', nameColumn: 'kind', extraColumns: ['payload'], mapRow: (r: object) => r };
    for (const bad of HOSTILE_SCHEMAS) {
      await expectConfigError(() => defineLeasedTable({ ...ok, schema: bad as string }), 'schema');
      await expectConfigError(() => defineLeasedTable({ ...ok, table: bad as string }), 'table');
      await expectConfigError(() => defineLeasedTable({ ...ok, nameColumn: bad as string }), 'nameColumn');
      await expectConfigError(() => defineLeasedTable({ ...ok, extraColumns: ['payload', bad as string] }), 'extraColumns');
    }
  });
});

// null and undefined mean "not given" (the default) for optional options, so they are not here
const BAD_DURATIONS: unknown[] = [-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '', 'soon', '-5s', '1e400', 1e300, '200y', {}, true];
const BAD_POSITIVE_DURATIONS = [...BAD_DURATIONS, 0, '0ms'];

// [entry point and option, call given the bad value, option it must name, whether zero is allowed]
const DURATION_ENTRY_POINTS: [string, (d: never) => unknown, string, boolean][] = [
  ['claim lease', (lease) => claim(noSql, { owner: 'w', batch: 1, lease }), 'lease', false],
  ['extendLease lease', (lease) => extendLease(noSql, token, { lease }), 'lease', false],
  ['reschedule delay', (delay) => reschedule(noSql, token, { delay, error: 'x' }), 'delay', true],
  ['DeferError delay', (delay) => new DeferError(delay, 'later'), 'delay', true],
  ['dispatchOnce lease', (lease) => dispatchOnce(noSql, handle, { owner: 'w', lease }), 'lease', false],
  ['dispatchOnce maxDeferAge', (maxDeferAge) => dispatchOnce(noSql, handle, { owner: 'w', maxDeferAge }), 'maxDeferAge', false],
  ['enqueue delay', (delay) => enqueue(noSql, task, {}, { delay }), 'delay', true],
  ['defineTask lease', (lease) => defineTask('t', { handler: handle, lease }), 'lease', false],
  ['defineTask handlerTimeout', (handlerTimeout) => defineTask('t', { handler: handle, handlerTimeout }), 'handlerTimeout', false],
  ['defineTask maxDeferAge', (maxDeferAge) => defineTask('t', { handler: handle, maxDeferAge }), 'maxDeferAge', false],
  ['defineTask backoff.base', (base) => defineTask('t', { handler: handle, backoff: { base } }), 'backoff.base', false],
  ['defineTask backoff.cap', (cap) => defineTask('t', { handler: handle, backoff: { cap } }), 'backoff.cap', false],
  ['worker lease', (lease) => createLeaseWorker({ pool: noSql, table: taskTable(), handle, lease }), 'lease', false],
  ['worker pollInterval', (pollInterval) => createLeaseWorker({ pool: noSql, table: taskTable(), handle, pollInterval }), 'pollInterval', false],
  [
    'worker heartbeatInterval',
    (heartbeatInterval) => createLeaseWorker({ pool: noSql, table: taskTable(), handle, heartbeatInterval }),
    'heartbeatInterval',
    false,
  ],
  ['worker handlerTimeout', (handlerTimeout) => createLeaseWorker({ pool: noSql, table: taskTable(), handle, handlerTimeout }), 'handlerTimeout', false],
  ['createWorker pollInterval', (pollInterval) => createWorker({ pool: noSql, tasks: [task], pollInterval }), 'pollInterval', false],
  ['worker.stop timeout', (timeout) => createLeaseWorker({ pool: noSql, table: taskTable(), handle }).stop({ timeout }), 'timeout', true],
];

describe('hostile durations', () => {
  for (const [entry, call, option, allowZero] of DURATION_ENTRY_POINTS) {
    it(`${entry} refuses negative, NaN, Infinity and unparsable durations${allowZero ? '' : ' and zero'}`, async () => {
      for (const value of allowZero ? BAD_DURATIONS : BAD_POSITIVE_DURATIONS) await expectConfigError(() => call(value as never), option, value);
    });
  }

  it('durations that drive a timer stop at 2^31-1 ms (about 24.8 days); delays kept in the database may be longer', async () => {
    const tooLongForATimer = ['25d', 2 ** 31];
    for (const d of tooLongForATimer) {
      await expectConfigError(() => claim(noSql, { owner: 'w', batch: 1, lease: d }), 'lease', d);
      await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, pollInterval: d }), 'pollInterval', d);
      await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, heartbeatInterval: d }), 'heartbeatInterval', d);
      await expectConfigError(() => defineTask('t', { handler: handle, lease: d }), 'lease', d);
    }
    // a run-at a month away, a defer of a month, a 30-day defer age are fine
    await expect(enqueue(noSql, task, {}, { delay: '30d' })).rejects.toThrow('SQL ran');
    expect(new DeferError('30d', 'later').delayMs).toBe(30 * 86_400_000);
    expect(defineTask('t', { handler: handle, maxDeferAge: '30d' }).settings.policy.maxDeferAgeMs).toBe(30 * 86_400_000);
  });

  it('a handler time limit or heartbeat not shorter than the lease is refused', async () => {
    await expectConfigError(() => defineTask('t', { handler: handle, lease: '10s', handlerTimeout: '10s' }), 'handlerTimeout');
    await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, lease: '1s', handlerTimeout: '2s' }), 'handlerTimeout');
    await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, lease: '1s', heartbeatInterval: '1s' }), 'heartbeatInterval');
  });
});

const BAD_COUNTS: unknown[] = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '5', 2 ** 53];
const BAD_PRIORITIES: unknown[] = [Number.NaN, 1.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 31, -(2 ** 31) - 1, '1'];

describe('hostile counts, priorities, owners and names', () => {
  it.each([
    ['claim batch', (batch: never) => claim(noSql, { owner: 'w', batch, lease: '1s' }), 'batch'],
    ['dispatchOnce batch', (batch: never) => dispatchOnce(noSql, handle, { owner: 'w', batch }), 'batch'],
    ['worker concurrency', (concurrency: never) => createLeaseWorker({ pool: noSql, table: taskTable(), handle, concurrency }), 'concurrency'],
    ['worker batch', (batch: never) => createLeaseWorker({ pool: noSql, table: taskTable(), handle, batch }), 'batch'],
    ['createWorker concurrency', (concurrency: never) => createWorker({ pool: noSql, tasks: [task], concurrency }), 'concurrency'],
    ['defineTask maxAttempts', (maxAttempts: never) => defineTask('t', { handler: handle, maxAttempts }), 'maxAttempts'],
    ['enqueue maxAttempts', (maxAttempts: never) => enqueue(noSql, task, {}, { maxAttempts }), 'maxAttempts'],
  ])('%s refuses zero, negative, fractional, NaN, Infinity and non-numbers', async (_entry, call, option) => {
    for (const value of BAD_COUNTS) await expectConfigError(() => call(value as never), option, value);
  });

  it('enqueue and defineTask refuse NaN, fractional, infinite and out-of-range priorities', async () => {
    for (const priority of BAD_PRIORITIES) {
      await expectConfigError(() => enqueue(noSql, task, {}, { priority: priority as number }), 'priority', priority);
      await expectConfigError(() => enqueueMany(noSql, task, [{ payload: {}, priority: priority as number }]), 'priority', priority);
      await expectConfigError(() => defineTask('t', { handler: handle, priority: priority as number }), 'priority', priority);
    }
  });

  it('refuses empty, oversized and non-string owners', async () => {
    // 201 bytes of one-byte and of two-byte characters, NUL, a lone surrogate
    for (const owner of ['', 'x'.repeat(201), 'é'.repeat(101), 'w\u0000', 'w\ud800', 7]) {
      await expectConfigError(() => claim(noSql, { owner: owner as string, batch: 1, lease: '1s' }), 'owner', owner);
      await expectConfigError(() => dispatchOnce(noSql, handle, { owner: owner as string }), 'owner', owner);
      await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, owner: owner as string }), 'owner', owner);
    }
    // required options: missing is as bad as wrong
    await expectConfigError(() => claim(noSql, { owner: null as never, batch: 1, lease: '1s' }), 'owner', null);
    await expectConfigError(() => claim(noSql, { owner: 'w', batch: null as never, lease: '1s' }), 'batch', null);
    await expectConfigError(() => claim(noSql, { owner: 'w', batch: 1, lease: null as never }), 'lease', null);
  });

  it('refuses a worker that would claim nothing (empty names) and tasks not made by defineTask', async () => {
    await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, names: [] }), 'names');
    await expectConfigError(() => createWorker({ pool: noSql, tasks: [] }), 'tasks');
    await expectConfigError(() => createWorker({ pool: noSql, tasks: [{ name: 'x' } as never] }), 'tasks');
    await expectConfigError(() => createWorker({ pool: noSql, tasks: [task, task] }), 'tasks');
    await expectConfigError(() => enqueue(noSql, { name: 'x' } as never, {}), 'task');
  });

  it('refuses a worker without a pool or handler, and task definitions without a name or handler', async () => {
    await expectConfigError(() => createLeaseWorker({ pool: {} as never, table: taskTable(), handle }), 'pool');
    await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle: 'run' as never }), 'handle');
    for (const name of ['', 'x'.repeat(201), 'é'.repeat(101), 't\u0000', 't\udc00', null, 5]) {
      await expectConfigError(() => defineTask(name as string, { handler: handle }), 'name', name);
    }
    await expectConfigError(() => defineTask('t', {} as never), 'handler');
    await expectConfigError(() => defineTask('t', { handler: handle, validate: {} as never }), 'validate');
  });

  it('enqueue refuses empty or non-string group and dedup keys, a missing group on an ordered task, and invalid dates', async () => {
    const ordered = defineTask<object>('ordered', { handler: handle, ordered: true });
    // @ts-expect-error the types require the groupKey too (test/types); this checks the run-time guard
    await expectConfigError(() => enqueue(noSql, ordered, {}), 'groupKey');
    for (const key of ['', 5]) {
      await expectConfigError(() => enqueue(noSql, task, {}, { groupKey: key as string }), 'groupKey');
      await expectConfigError(() => enqueue(noSql, task, {}, { dedupKey: key as string }), 'dedupKey');
    }
    for (const runAt of [new Date(Number.NaN), '2030-01-01', 0]) {
      await expectConfigError(() => enqueue(noSql, task, {}, { runAt: runAt as Date }), 'runAt');
    }
  });
});

// Gaps this suite found in core, fixed there; these tests keep them fixed.
describe('gaps found by this suite', () => {
  it('a schema name PostgreSQL reserves (pg_*) is a ConfigError, not error 42939 from CREATE SCHEMA', async () => {
    await expectConfigError(() => migrate(noSql, { schema: 'pg_evil' }), 'schema', 'pg_evil');
  });

  it('a malformed fencing token (non-numeric id, NaN or fractional version) is a ConfigError, not error 22P02', async () => {
    await expectConfigError(() => markDone(noSql, { id: 'abc', leaseVersion: 1 }), 'id', 'abc');
    // nineteen digits, but past bigint's maximum: error 22003 from the statement
    await expectConfigError(() => markDone(noSql, { id: '9223372036854775808', leaseVersion: 1 }), 'id', '9223372036854775808');
    await expectConfigError(() => markDone(noSql, { id: '1', leaseVersion: Number.NaN }), 'leaseVersion', Number.NaN);
  });

  it('a lease too long for a PostgreSQL interval is a ConfigError, not error 22008 from the claim', async () => {
    await expectConfigError(() => claim(noSql, { owner: 'w', batch: 1, lease: 1e300 }), 'lease', 1e300);
  });

  it('a timer duration past setTimeout\'s 24.8-day limit is a ConfigError (Node would fire it after 1 ms)', async () => {
    await expectConfigError(() => createLeaseWorker({ pool: noSql, table: taskTable(), handle, pollInterval: '30d' }), 'pollInterval', '30d');
  });
});
