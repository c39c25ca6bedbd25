// A worker at low load writes its completions one to a handful at a time, and such writes have
// statements of their own (one row: a plain UPDATE by primary key; a few: joined to their tokens),
// not the many-row statement's CTEs. They must keep the fence of every fenced write: each row is
// written only under the token its claim handed out, each item hears whether it was, in the order
// it was given, and a result is stored with its row.
import { describe, expect, it } from 'vitest';
import { defineTask, enqueue, enqueueMany, taskTable } from '@leasehold/core';
import { leaseClaim, leaseFinalizeMany, toDone } from '@leasehold/core/internal';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const job = defineTask<{ n: number }>('finalize-few', { handler: () => {} });

interface Row {
  readonly status: string;
  readonly lease_version: string;
  readonly lease_owner: string | null;
  readonly lease_until: Date | null;
  readonly done_at: Date | null;
  readonly result: unknown;
}

async function row(id: string): Promise<Row> {
  const { rows } = await t.pool.query<Row>('SELECT status, lease_version, lease_owner, lease_until, done_at, result FROM leasehold.task WHERE id = $1', [id]);
  return rows[0]!;
}

async function claim(owner: string, leaseMs: number, batch: number) {
  const { claimed } = await leaseClaim(t.pool, table, { owner, batch, leaseMs });
  expect(claimed).toHaveLength(batch);
  return claimed;
}

const claimOne = async (owner: string, leaseMs: number) => (await claim(owner, leaseMs, 1))[0]!;

/** The leases of these tasks run out, as a crashed worker's do: the next claim takes them over. */
async function expire(ids: readonly string[]): Promise<void> {
  await t.pool.query("UPDATE leasehold.task SET lease_until = now() - interval '1 second' WHERE id = ANY($1::bigint[])", [ids]);
}

describe('the completion of one task, or a few', () => {
  it('of one: written under its own token, with its result, and refused under any other', async () => {
    const { id } = await enqueue(t.pool, job, { n: 1 });
    const first = await claimOne('one-a', 3_600_000);
    // another worker takes the task over once its lease runs out: the first token is stale
    await expire([id]);
    const second = await claimOne('one-b', 3_600_000);
    expect(second.id).toBe(id);
    expect(second.leaseVersion).toBeGreaterThan(first.leaseVersion);

    const stale = await leaseFinalizeMany(t.pool, table, [{ id, leaseVersion: first.leaseVersion, transition: toDone('{"by":"a"}') }]);
    expect(stale).toEqual([{ id, won: false, status: null }]);
    const untouched = await row(id);
    expect(untouched).toMatchObject({ status: 'processing', lease_owner: 'one-b', done_at: null, result: null });
    expect(Number(untouched.lease_version)).toBe(second.leaseVersion);

    const current = await leaseFinalizeMany(t.pool, table, [{ id, leaseVersion: second.leaseVersion, transition: toDone('{"by":"b"}') }]);
    expect(current).toEqual([{ id, won: true, status: 'done' }]);
    const done = await row(id);
    expect(done).toMatchObject({ status: 'done', lease_owner: null, lease_until: null, result: { by: 'b' } });
    expect(done.done_at).toBeInstanceOf(Date);

    // the same token again: the row is no longer processing, so nothing is written twice
    const again = await leaseFinalizeMany(t.pool, table, [{ id, leaseVersion: second.leaseVersion, transition: toDone('{"by":"again"}') }]);
    expect(again).toEqual([{ id, won: false, status: null }]);
    expect((await row(id)).result).toEqual({ by: 'b' });
  });

  it('of one, without a result: the column left empty', async () => {
    const { id } = await enqueue(t.pool, job, { n: 2 });
    const claimed = await claimOne('one-c', 3_600_000);
    expect(await leaseFinalizeMany(t.pool, table, [{ id, leaseVersion: claimed.leaseVersion, transition: toDone() }])).toEqual([{ id, won: true, status: 'done' }]);
    expect(await row(id)).toMatchObject({ status: 'done', result: null, lease_owner: null });
  });

  it('of a few: each written under its own token, told in the order given', async () => {
    const made = await enqueueMany(t.pool, job, Array.from({ length: 6 }, (_, n) => ({ payload: { n } })));
    const ids = made.map((m) => m.id);
    // two tasks' leases run out and another worker takes them over: their first tokens are stale
    const first = await claim('few-a', 3_600_000, 2);
    await expire(first.map((c) => c.id));
    const taken = await claim('few-b', 3_600_000, 6);
    const token = new Map(taken.map((c) => [c.id, c.leaseVersion]));
    const stale = first.map((c) => ({ id: c.id, leaseVersion: c.leaseVersion }));
    expect(stale.every((s) => token.get(s.id)! > s.leaseVersion)).toBe(true);

    const [s0, s1] = stale.map((s) => s.id) as [string, string];
    const others = ids.filter((id) => id !== s0 && id !== s1);

    // out of id order, a stale and a current token for the same task, and tasks left out
    const current = (id: string, by: string) => ({ id, leaseVersion: token.get(id)!, transition: toDone(JSON.stringify({ by })) });
    const results = await leaseFinalizeMany(t.pool, table, [
      current(others[2]!, 'c'),
      { ...stale[0]!, transition: toDone('{"by":"stale"}') },
      current(others[0]!, 'a'),
      current(s0, 'current'),
      { ...stale[1]!, transition: toDone('{"by":"stale"}') },
      current(others[1]!, 'b'),
    ]);
    expect(results).toEqual([
      { id: others[2], won: true, status: 'done' },
      { id: s0, won: false, status: null },
      { id: others[0], won: true, status: 'done' },
      { id: s0, won: true, status: 'done' },
      { id: s1, won: false, status: null },
      { id: others[1], won: true, status: 'done' },
    ]);
    expect((await row(s0)).result).toEqual({ by: 'current' });
    expect((await row(others[2]!)).result).toEqual({ by: 'c' });
    // refused under its stale token, and left out: both still the second worker's
    for (const id of [s1, others[3]!]) expect(await row(id)).toMatchObject({ status: 'processing', lease_owner: 'few-b', result: null });
  });
});
