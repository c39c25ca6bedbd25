// The outbox's migration line: applied after core's, idempotent, and shaped so core's lease
// machinery can drive the table (the same lease columns as core's task table).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { TASK_STATUSES } from '@leasehold/core';
import { createOutbox, migrate } from '@leasehold/outbox';
import { useTestDatabase } from '../fixtures.js';
import { allMigrations } from '../migration-lines.js';

const t = useTestDatabase();

const LEASE_COLUMNS = [
  'id', 'payload', 'priority', 'group_key', 'created_at', 'status', 'available_at', 'attempts',
  'max_attempts', 'lease_owner', 'lease_until', 'lease_version', 'last_error', 'done_at',
];

describe('migrate', () => {
  it('applies core\'s line, then its own, once', async () => {
    expect(await migrate(t.pool, { schema: 'obx' })).toEqual({ schema: 'obx', applied: allMigrations('core', 'outbox') });
    expect(await migrate(t.db, { schema: 'obx' })).toEqual({ schema: 'obx', applied: [] });
  });

  it('gives the outbox the lease columns of core\'s task table, column for column', async () => {
    const { rows } = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null; is_identity: string }>`
      SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity
      FROM information_schema.columns
      WHERE table_schema = 'leasehold' AND table_name IN ('task', 'outbox') AND column_name = ANY(${LEASE_COLUMNS})
      ORDER BY column_name`.execute(t.db);
    const shape = (table: string) =>
      rows.filter((r) => r.table_name === table).map(({ table_name: _t, column_default, ...r }) => ({
        ...r,
        // the payload default differs on purpose: an outbox event always has a payload
        column_default: r.column_name === 'payload' ? null : column_default,
      }));
    expect(shape('outbox')).toHaveLength(LEASE_COLUMNS.length);
    expect(shape('outbox')).toEqual(shape('task'));
  });

  it('has a status CHECK listing exactly TASK_STATUSES', async () => {
    const { rows } = await sql<{ def: string }>`
      SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = 'leasehold.outbox'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%status%'`.execute(t.db);
    expect(rows).toHaveLength(1);
    const listed = [...rows[0]!.def.matchAll(/'(\w+)'/g)].map((m) => m[1]);
    expect(listed).toEqual([...TASK_STATUSES]);
  });

  it('notifies leasehold:<schema>.outbox at commit while a dispatcher may be asleep, once per transaction; not while none is', async () => {
    await migrate(t.pool, { schema: 'obx' });
    const listener = await t.client();
    const heard: string[] = [];
    listener.on('notification', (n) => void heard.push(n.channel));
    await listener.query('LISTEN "leasehold:obx.outbox"');
    const outbox = createOutbox({ schema: 'obx' });
    const addFour = () =>
      t.db.transaction().execute(async (trx) => {
        await outbox.addMany(trx, [1, 2, 3].map((i) => ({ aggregateType: 'a', aggregateId: i, eventType: 'E', payload: {} })));
        await outbox.add(trx, { aggregateType: 'a', aggregateId: 4, eventType: 'E', payload: {} });
      });
    // no dispatcher has announced that it sleeps: the awake ones claim again before they sleep
    await addFour();
    // what a dispatcher does before it sleeps (core migration 5): announce it for a while
    await sql`SELECT setval('obx.outbox_wake', (date_part('epoch', clock_timestamp()) * 1000)::bigint + 60000)`.execute(t.db);
    await addFour();
    await expect.poll(() => heard, { timeout: 5_000 }).toEqual(['leasehold:obx.outbox']);
    // the first transaction's notification would have arrived before the second's
    expect(heard).toHaveLength(1);
  });
});
