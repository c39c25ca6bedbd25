// Claims of core's task table and of the outbox send their rows as JSON chunks (claim-json.ts)
// instead of a protocol row each. What a worker gets must not change: each row here is claimed
// both ways, the JSON path and the generic path (the same table described without JSON), in one
// transaction so that both see the same now(), and the two must be equal field for field.
import { defineLeasedTable, taskTable, type LeasedTable } from '@leasehold/core';
import { leaseClaim, type LeaseClaimResult } from '@leasehold/core/internal';
import { outboxTable } from '@leasehold/outbox';
import { sql } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();

/** `table` described without JSON: its claims return a protocol row per claimed row. */
function withoutJson<Row>(table: LeasedTable<Row>): LeasedTable<Row> {
  const generic = defineLeasedTable({
    schema: table.schema,
    table: table.table,
    nameColumn: table.nameColumn,
    extraColumns: table.extraColumns,
    mapRow: table.mapRow,
    limits: table.limitTable !== undefined,
    waits: table.waits === true,
  });
  expect(generic.claimJson).toBeUndefined();
  expect(table.claimJson).toBeDefined();
  return generic;
}

/**
 * Claims up to `batch` rows of `table` through its JSON path, puts them back as they were, and
 * claims them again through the generic path, all in one transaction that is rolled back.
 */
async function claimBothWays<Row>(table: LeasedTable<Row>, batch: number, readyOnly: boolean): Promise<[LeaseClaimResult<Row>, LeaseClaimResult<Row>]> {
  const client: pg.PoolClient = await t.pool.connect();
  const target = `${table.schema}.${table.table}`;
  try {
    await client.query('BEGIN');
    const json = await leaseClaim(client, table, { owner: 'both-ways', batch, leaseMs: 60_000, readyOnly });
    await client.query(
      `UPDATE ${target} SET status = 'pending', lease_version = lease_version - 1, attempts = attempts - 1,
         lease_owner = NULL, lease_until = NULL WHERE id = ANY($1::bigint[])`,
      [json.claimed.map((r) => (r as { id: string }).id)],
    );
    const rows = await leaseClaim(client, withoutJson(table), { owner: 'both-ways', batch, leaseMs: 60_000, readyOnly });
    return [json, rows];
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

const TRICKY = `tab\t"quote" back\\slash \u0001 line\nbreak \u2028 emoji 😀 漢字 '`;

describe('claimed rows as JSON', () => {
  it('carry every field of a task row as the protocol row would, whatever its text and JSON', async () => {
    await sql`
      INSERT INTO leasehold.task (name, payload, priority, group_key, dedup_key, checkpoint, traceparent, tracestate,
                                  attempts, max_attempts, created_at, available_at, parent_id)
      VALUES (${TRICKY}, jsonb_build_object('s', ${TRICKY}::text, 'n', 12345678901234567890::numeric, 'a', '[1, null, {"x": true}]'::jsonb,
                                            'f', 1.5e300::numeric, 'e', '{}'::jsonb),
              7, ${`group ${TRICKY}`}, ${`dedup ${TRICKY}`}, ${JSON.stringify('a string checkpoint')}::jsonb, ${TRICKY}, ${`state=${TRICKY}`},
              2, 5, '2026-01-02 03:04:05.678901+00', now() - interval '1.5 ms', 9007199254740993),
             ('plain', '{}'::jsonb, 0, NULL, NULL, 'null'::jsonb, NULL, NULL, 0, 12, now(), now(), NULL),
             ('no-checkpoint', '[]'::jsonb, -3, NULL, NULL, NULL, NULL, NULL, 0, 1, now(), now(), NULL)
    `.execute(t.db);
    for (const readyOnly of [true, false]) {
      const [json, rows] = await claimBothWays(taskTable(), 16, readyOnly);
      expect(json.claimed).toHaveLength(3);
      expect(json).toEqual(rows);
      expect(Object.keys(json.claimed[0]!)).toEqual(Object.keys(rows.claimed[0]!));
    }
    const [json] = await claimBothWays(taskTable(), 16, true);
    const tricky = json.claimed[0]!;
    expect(tricky.name).toBe(TRICKY);
    expect(tricky.parentId).toBe('9007199254740993');
    expect(tricky.createdAt.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(json.claimed[1]!.checkpoint).toBeNull();
    expect(json.claimed[2]!.checkpoint).toBeNull();
  });

  it('give a timestamp no Date can hold as an invalid Date, as the protocol row does', async () => {
    await sql`INSERT INTO leasehold.task (name, payload, available_at) VALUES ('forever-due', '{}'::jsonb, '-infinity')`.execute(t.db);
    const [json, rows] = await claimBothWays(taskTable(), 16, true);
    const [a, b] = [json.claimed.find((r) => r.name === 'forever-due')!, rows.claimed.find((r) => r.name === 'forever-due')!];
    expect(Number.isNaN(a.availableAt.getTime())).toBe(true);
    expect(Number.isNaN(b.availableAt.getTime())).toBe(true);
    await sql`DELETE FROM leasehold.task WHERE name = 'forever-due'`.execute(t.db);
  });

  it('come back each once and in id order across many chunks, a row larger than a chunk whole among them', async () => {
    await sql`DELETE FROM leasehold.task`.execute(t.db);
    const big = 'x'.repeat(200_000);
    await sql`
      INSERT INTO leasehold.task (name, payload)
      SELECT 'many', CASE WHEN g IN (70, 500) THEN jsonb_build_object('big', ${big}::text, 'g', g) ELSE jsonb_build_object('g', g) END
      FROM generate_series(1, 1500) AS g
    `.execute(t.db);
    const first = await leaseClaim(t.pool, taskTable(), { owner: 'chunks', batch: 1024, leaseMs: 60_000 });
    const second = await leaseClaim(t.pool, taskTable(), { owner: 'chunks', batch: 1024, leaseMs: 60_000, readyOnly: true });
    const all = [...first.claimed, ...second.claimed];
    expect(first.claimed).toHaveLength(1024);
    expect(all.map((r) => (r.payload as { g: number }).g)).toEqual(Array.from({ length: 1500 }, (_, i) => i + 1));
    const ids = all.map((r) => BigInt(r.id));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
    expect((all[69]!.payload as { big: string }).big).toBe(big);
    expect((all[499]!.payload as { big: string }).big).toBe(big);
  });

  it('carry every field of an outbox row as the protocol row would', async () => {
    await sql`
      INSERT INTO leasehold.outbox (aggregate_type, aggregate_id, event_type, payload, headers, priority)
      VALUES (${TRICKY}, ${`id ${TRICKY}`}, 'order.placed', ${JSON.stringify({ s: TRICKY, list: [1, 2.5, 'x'] })}::jsonb,
              ${JSON.stringify({ 'content-type': 'application/json', note: TRICKY })}::jsonb, 3),
             ('order', '42', 'order.paid', '{}'::jsonb, '{}'::jsonb, 0)
    `.execute(t.db);
    for (const readyOnly of [true, false]) {
      const [json, rows] = await claimBothWays(outboxTable(), 16, readyOnly);
      expect(json.claimed).toHaveLength(2);
      expect(json).toEqual(rows);
      expect(Object.keys(json.claimed[0]!)).toEqual(Object.keys(rows.claimed[0]!));
    }
  });
});
