// The children of a large fan-out end in batches; each ending child checks whether it was its
// parent's last. That check visits its siblings' rows, so it must run once for the batch that
// ends the last of them, not once per child of that batch: ending the last 1,000 of 5,000
// children in one fenced write used to visit some 190,000 row versions (1.2 s, growing with both
// numbers).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { taskTable } from '@leasehold/core';
import { leaseFinalizeMany, toDone, type FinalizeItem } from '@leasehold/core/internal';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const CHILDREN = 5_000;
const BATCH = 1_000;

/**
 * Buffer fetches of the task table by the open transaction of `client`: each visit of a row
 * version counts one, so it follows how many sibling rows the checks looked at.
 */
async function taskBlockFetches(client: { query: (text: string) => Promise<{ rows: { n: string }[] }> }): Promise<number> {
  const { rows } = await client.query(`SELECT pg_stat_get_xact_blocks_fetched('leasehold.task'::regclass) AS n`);
  return Number(rows[0]!.n);
}

describe('fan-in at size', () => {
  it(`the batch ending the last ${BATCH.toLocaleString('en')} of ${CHILDREN.toLocaleString('en')} children checks their siblings about once, and wakes the parent`, async () => {
    // a parent parked waiting for its children, every child running under a lease
    const { rows: parents } = await sql<{ id: string }>`
      INSERT INTO leasehold.task (name, payload, status, wait_for) VALUES ('fan-in-parent', '{}', 'waiting', 'children') RETURNING id`.execute(t.db);
    const parent = parents[0]!.id;
    await sql`
      INSERT INTO leasehold.task (name, payload, status, parent_id, attempts, lease_version, lease_owner, lease_until)
      SELECT 'fan-in-child', '{}', 'processing', ${parent}, 1, 1, 'me', now() + interval '1 hour' FROM generate_series(1, ${CHILDREN})`.execute(t.db);
    await sql`ANALYZE leasehold.task`.execute(t.db);
    const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.task WHERE parent_id = ${parent} ORDER BY id`.execute(t.db);
    const batches: FinalizeItem[][] = [];
    for (let i = 0; i < rows.length; i += BATCH) {
      batches.push(rows.slice(i, i + BATCH).map(({ id }) => ({ id, leaseVersion: 1, transition: toDone(), groupKey: null, parentId: parent })));
    }
    const parentStatus = async () => (await sql<{ status: string }>`SELECT status FROM leasehold.task WHERE id = ${parent}`.execute(t.db)).rows[0]!.status;

    for (const batch of batches.slice(0, -1)) {
      expect((await leaseFinalizeMany(t.pool, table, batch)).every((r) => r.won)).toBe(true);
      expect(await parentStatus()).toBe('waiting'); // some children still run
    }

    const client = await t.client();
    await client.query('BEGIN');
    const last = await leaseFinalizeMany(client, table, batches.at(-1)!);
    const fetches = await taskBlockFetches(client);
    await client.query('COMMIT');
    expect(last.every((r) => r.won)).toBe(true);
    expect(await parentStatus()).toBe('pending'); // the last child woke it
    // the batch's own writes and one look at each sibling: some 10,000 fetches here; checking the
    // siblings once per ending child took 192,000
    expect(fetches).toBeLessThanOrEqual(3 * CHILDREN);
  });
});
