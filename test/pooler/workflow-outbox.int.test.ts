// Issue 36, poolers: a workflow (steps, a durable sleep, a signal), the outbox (add in the
// application's transaction, the dispatcher) and the dashboard, all through a private PgBouncer
// in transaction mode with `noPreparedStatements`; 0 errors.
import { Kysely, PostgresDialect, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  createWorker,
  defineSignal,
  defineTask,
  enqueue,
  noPreparedStatements,
  sendSignal,
  waitForResult,
  withTransaction,
  type TaskContext,
} from '@leasehold/core';
import { createDispatcher, createOutbox, type OutboxMessage } from '@leasehold/outbox';
import { startDashboard } from '@leasehold/dashboard';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { databaseOf, usePgBouncer } from './pgbouncer.js';
import { usePools, waitUntil } from './pooled.js';

const t = useTestDatabase();
const bouncer = usePgBouncer();
const openPool = usePools(() => bouncer.url(databaseOf(t.url)));
const track = useWorkers();

describe('through PgBouncer in transaction mode', () => {
  it('a workflow runs its steps, a durable sleep and a signal wait, each recorded once', async () => {
    const approved = defineSignal<{ by: string }>('pooler-approved');
    const calls: string[] = [];
    const pool = openPool();
    // the application's Kysely over the same pool: a database step commits in its transaction
    const db = new Kysely<object>({ dialect: new PostgresDialect({ pool }) });
    const flow = defineTask('pooler-flow', {
      handler: async (p: { order: string }, ctx: TaskContext) => {
        const reserved = await ctx.step('reserve', () => (calls.push('reserve'), `r-${p.order}`));
        await ctx.dbStep('record', db, async (trx) => void (await sql`SELECT ${reserved}::text`.execute(trx)));
        await ctx.sleep('cool-off', '300ms');
        const approval = await ctx.waitForSignal(approved, { timeout: '1h' });
        const charged = await ctx.step('charge', () => (calls.push('charge'), 'c-1'));
        return { reserved, charged, by: approval.timedOut ? null : approval.payload.by };
      },
    });
    const worker = track(createWorker({ pool, tasks: [flow], noPreparedStatements: true, pollInterval: 50, logger: null }));
    const errors: Error[] = [];
    worker.on('worker:error', ({ error }) => errors.push(error));
    await worker.start();
    const ref = await enqueue(pool, flow, { order: 'o-1' });
    // parked for the sleep, then for the signal
    await waitUntil(async () => {
      const { rows } = await sql<{ wait_for: string | null }>`SELECT wait_for FROM leasehold.task WHERE id = ${ref.id}`.execute(t.db);
      return rows[0]?.wait_for?.includes('pooler-approved') ?? false;
    }, 'the signal wait');
    await withTransaction(pool, (trx) => sendSignal(trx, ref, approved, { by: 'ann' }));
    expect(await waitForResult(pool, ref, { timeout: '20s', pollInterval: '50ms' })).toEqual({ reserved: 'r-o-1', charged: 'c-1', by: 'ann' });
    await worker.stop({ timeout: '5s' });
    expect(errors).toEqual([]);
    // replayed after each park, each step ran once
    expect(calls).toEqual(['reserve', 'charge']);
  });

  it('the outbox: events added in the application transaction through the pooler are each published once by a dispatcher behind it', async () => {
    const published: OutboxMessage[] = [];
    const pool = openPool();
    const dispatcher = track(
      createDispatcher({ pool, publisher: { publish: async (m) => void published.push(m) }, noPreparedStatements: true, pollInterval: 50, logger: null }),
    );
    const errors: Error[] = [];
    dispatcher.on('worker:error', ({ error }) => errors.push(error));
    await dispatcher.start();
    const producer = noPreparedStatements(openPool({ max: 4 }));
    const outbox = createOutbox({ orderedEventTypes: ['Ordered'] });
    for (let i = 0; i < 40; i++) {
      await withTransaction(producer, async (trx) => {
        await outbox.add(trx, { aggregateType: 'order', aggregateId: String(i % 4), eventType: i % 2 === 0 ? 'Ordered' : 'Loose', payload: { i } });
      });
    }
    await waitUntil(() => published.length >= 40, '40 messages published');
    await dispatcher.stop({ timeout: '5s' });
    expect(errors).toEqual([]);
    expect(new Set(published.map((m) => m.id)).size).toBe(40);
    const { rows } = await sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM leasehold.outbox GROUP BY status`.execute(t.db);
    expect(rows).toEqual([{ status: 'done', n: 40 }]);
  });

  it('the dashboard reads its pages through the pooler', async () => {
    const pool = openPool({ max: 2 });
    const dashboard = await startDashboard({ database: pool, port: 0, noPreparedStatements: true });
    try {
      // every page twice: a second run of a named statement is what fails through the pooler
      for (const path of ['', '', 'tasks?status=done', 'tasks?status=done', 'outbox', 'outbox']) {
        const response = await fetch(new URL(path, dashboard.url));
        expect(response.status, path).toBe(200);
      }
    } finally {
      await dashboard.close();
    }
  });
});
