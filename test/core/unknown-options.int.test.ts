// Options are checked at run time (issue 34): every public options object refuses a key it does
// not know with a ConfigError naming it (and the nearest valid key, or where the key belongs),
// before anything touches the database. JavaScript callers, and TypeScript callers passing a
// variable, get no compile-time excess-property check: these calls go through `as never`.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  cancelTask,
  claim,
  ConfigError,
  createLeaseWorker,
  createWorker,
  defineLimit,
  defineSchedule,
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
  type PgQueryable,
} from '@leasehold/core';
import { createDispatcher, createOutbox } from '@leasehold/outbox';
import { createInbox, httpPublisher, verifyWebhook } from '@leasehold/adapters-http';
import { mountDashboard, startDashboard } from '@leasehold/dashboard';
import { sql } from 'kysely';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const noSql: PgQueryable = {
  query: async () => {
    throw new Error('SQL ran');
  },
};
const handler = async (): Promise<void> => {};
const report = defineTask<{ n: number }>('unknown-options-report', { handler });

function refusal(fn: () => unknown): ConfigError {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
  return error as ConfigError;
}

async function refusalAsync(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('an unknown option is a ConfigError naming it', () => {
  it('createWorker({ lease }) says the lease belongs on defineTask; a typo gets the nearest option', () => {
    const pool = new pg.Pool();
    const lease = refusal(() => createWorker({ pool, tasks: [report], lease: '10s' } as never));
    expect(lease.option).toBe('lease');
    expect(lease.message).toBe('unknown option `lease` for createWorker (lease belongs on defineTask: each task type sets its own)');
    const typo = refusal(() => createWorker({ pool, tasks: [report], concurency: 4 } as never));
    expect(typo.message).toBe('unknown option `concurency` for createWorker; did you mean `concurrency`?');
    expect(refusal(() => createWorker({ pool, tasks: [report], retention: { done: '1d', evrey: '1m' } } as never))).toMatchObject({
      option: 'retention.evrey',
      message: expect.stringContaining('did you mean `retention.every`?') as unknown,
    });
    expect(refusal(() => createLeaseWorker({ pool, table: taskTable(), handle: handler, polInterval: '1s' } as never)).message).toContain(
      'did you mean `pollInterval`?',
    );
    void pool.end();
  });

  it('defineTask, defineLimit and defineSchedule, nested objects included', () => {
    expect(refusal(() => defineTask('t', { handler, maxAtempts: 3 } as never)).message).toBe(
      'unknown option `maxAtempts` for defineTask "t"; did you mean `maxAttempts`?',
    );
    expect(refusal(() => defineTask('t', { handler, groupKey: 'g' } as never)).message).toContain('groupKey belongs on enqueue');
    expect(refusal(() => defineTask('t', { handler, backoff: { base: '1s', max: '1m' } } as never))).toMatchObject({ option: 'backoff.max' });
    expect(refusal(() => defineLimit('l', { concurrency: 2, rate: { limit: 1, perid: '1s' } } as never))).toMatchObject({
      option: 'rate.perid',
      message: expect.stringContaining('did you mean `rate.period`?') as unknown,
    });
    expect(refusal(() => defineSchedule('s', report, { cron: '* * * * *', payload: { n: 1 }, timeZone: 'UTC' } as never)).message).toContain(
      'did you mean `timezone`?',
    );
  });

  it('enqueue and enqueueMany refuse before any SQL runs; enqueueMany stores none of the batch', async () => {
    expect((await refusalAsync(enqueue(noSql, report, { n: 1 }, { dealy: '1s' } as never))).message).toBe(
      'unknown option `dealy` for enqueue; did you mean `delay`?',
    );
    const item = await refusalAsync(enqueueMany(noSql, report, [{ payload: { n: 1 } }, { payload: { n: 2 }, priorty: 1 } as never]));
    expect(item.option).toBe('items[1].priorty');
    expect(item.message).toContain('did you mean `items[1].priority`?');
    expect((await refusalAsync(enqueueMany(noSql, report, [{ payload: { n: 1 } }], { schema: 'leasehold', delay: '1s' } as never))).message).toContain(
      'give each item its own delay',
    );
    const before = await count();
    await refusalAsync(enqueueMany(t.pool, report, [{ payload: { n: 1 } }, { payload: { n: 2 }, grupKey: 'g' } as never]));
    expect(await count()).toBe(before);
  });

  it('the primitives, migrate, the outbox, the HTTP adapter and the dashboard', async () => {
    expect((await refusalAsync(claim(noSql, { owner: 'w', batch: 1, lease: '1s', name: ['x'] } as never))).message).toContain('did you mean `names`?');
    expect((await refusalAsync(migrate(t.db, { shema: 'leasehold' } as never))).message).toContain('did you mean `schema`?');
    expect(refusal(() => createOutbox({ maxAttempt: 3 } as never)).message).toContain('did you mean `maxAttempts`?');
    const publisher = { publish: async () => {} };
    expect(refusal(() => createDispatcher({ pool: t.pool, publisher, handlerTimeout: '1s' } as never)).message).toContain('publishTimeout');
    expect((await refusalAsync(createOutbox().add(noSql, { aggregateType: 'o', aggregateId: 1, eventType: 'E', payload: {}, header: {} } as never))).option).toBe(
      'event.header',
    );
    expect(refusal(() => httpPublisher({ url: 'https://example.com/hook', timout: '1s' } as never)).message).toContain('did you mean `timeout`?');
    expect(refusal(() => verifyWebhook({}, '', 'whsec_x', { toleranse: '1m' } as never)).option).toBe('toleranse');
    expect(refusal(() => createInbox({ table: 'x' } as never)).option).toBe('table');
    expect(refusal(() => mountDashboard({ database: t.pool, port: 4100 } as never)).message).toContain('port belongs on startDashboard');
    expect((await refusalAsync(createOutbox().purgeDone(noSql, { olderThan: '7d', batchSise: 10 } as never))).message).toContain('did you mean `batchSize`?');
    const worker = createWorker({ pool: new pg.Pool(), tasks: [report] });
    expect(refusal(() => void worker.stop({ timout: '1s' } as never)).message).toBe('unknown option `timout` for worker.stop; did you mean `timeout`?');
    expect((await refusalAsync(startDashboard({ database: t.pool, port: 0, readonly: true } as never))).message).toContain('did you mean `readOnly`?');
  });
});

describe('the workflow calls refuse an unknown option before any SQL', () => {
  it('waitForResult, cancelTask, sendSignal and getTask', async () => {
    expect((await refusalAsync(waitForResult(t.pool, '1', { timout: '1s' } as never))).message).toBe(
      'unknown option `timout` for waitForResult; did you mean `timeout`?',
    );
    expect((await refusalAsync(cancelTask(noSql, '1', { reasn: 'x' } as never))).message).toContain('did you mean `reason`?');
    const go = defineSignal<{ by: string }>('go');
    expect((await refusalAsync(sendSignal(noSql, '1', go, { by: 'a' }, { shema: 'leasehold' } as never))).message).toContain('did you mean `schema`?');
    expect((await refusalAsync(getTask(noSql, '1', { shema: 'leasehold' } as never))).option).toBe('shema');
  });

  it("leaseDeadList's page", async () => {
    const page = { limit: 10, afterId: null };
    expect((await refusalAsync(leaseDeadList(noSql, taskTable(), { ...page, afterID: '5' } as never))).message).toBe(
      'unknown option `afterID` for leaseDeadList; did you mean `afterId`?',
    );
    expect((await refusalAsync(leaseDeadList(noSql, taskTable(), { ...page, offset: 20 } as never))).message).toContain('pass the last id you got as `afterId`');
  });
});

async function count(): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task`.execute(t.db);
  return Number(rows[0]?.n);
}
