// Flow control in the claim (issue 14, docs/flow-control.md), one claim at a time: a limit's
// bounds in all and per key, its rate's sliding window, and how slots free — a fenced finalize,
// a retry, an expired lease. Concurrency across processes is limits-processes.int.test.ts's.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { defineLimit, defineTask, enqueueMany, limitList, taskTable, type LimitDefinition, type TaskDefinition } from '@leasehold/core';
import { leaseClaim, leaseExtendMany, leaseFinalizeMany, limitRegisterMany, toDone, toReleased, toRetry } from '@leasehold/core/internal';
import { useTestDatabase } from '../fixtures.js';
import { seeded } from '../seeded.js';

const t = useTestDatabase();
const table = taskTable();

beforeEach(async () => {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, leasehold.task_limit`.execute(t.db);
});

function taskUnder(name: string, limit: LimitDefinition): TaskDefinition<{ n: number }> {
  return defineTask<{ n: number }>(name, { limit, handler: () => {} });
}

async function register(limit: LimitDefinition, names: string[]): Promise<string[]> {
  return limitRegisterMany(t.pool, table, 'test', [{ limit, taskNames: names }], names);
}

async function claimUnder(flows: string[], batch = 16, leaseMs = 60_000) {
  return leaseClaim(t.pool, table, { owner: 'test', batch, leaseMs, flows });
}

async function finish(rows: readonly { id: string; leaseVersion: number }[], to = toDone()) {
  return leaseFinalizeMany(t.pool, table, rows.map((r) => ({ id: r.id, leaseVersion: r.leaseVersion, transition: to, groupKey: null })));
}

const items = (n: number, key?: (i: number) => string) => Array.from({ length: n }, (_, i) => ({ payload: { n: i }, ...(key ? { limitKey: key(i) } : {}) }));

describe('a concurrency limit', () => {
  it('holds the claim to N leases at once; a finished task frees its slot', async () => {
    const limit = defineLimit('api', { concurrency: 2 });
    const task = taskUnder('call-api', limit);
    expect(await register(limit, ['call-api'])).toEqual(['api']);
    await enqueueMany(t.pool, task, items(5));

    const first = await claimUnder(['api']);
    expect(first.claimed).toHaveLength(2);
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
    await finish(first.claimed.slice(0, 1));
    const next = await claimUnder(['api']);
    expect(next.claimed).toHaveLength(1);
    // a retry also leaves processing: its slot frees, and it waits again like any other row
    await finish(next.claimed, toRetry(0, 'flaky'));
    expect((await claimUnder(['api'])).claimed).toHaveLength(1);
  });

  it('a claim looks at listed leases only as far as it needs room, past the ones still running', async () => {
    const limit = defineLimit('api', { concurrency: 3 });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, items(8));
    const [a, b, c] = [...(await claimUnder(['api'], 1)).claimed, ...(await claimUnder(['api'], 1)).claimed, ...(await claimUnder(['api'], 1)).claimed];
    expect((await claimUnder(['api'], 1)).claimed).toHaveLength(0);
    // the newest lease ends: a claim of one finds its slot behind the two that still run
    await finish([c!]);
    expect((await claimUnder(['api'], 1)).claimed).toHaveLength(1);
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
    // two end while the list has room for none: a claim of 16 finds both, and no more
    await finish([a!, b!]);
    expect((await claimUnder(['api'])).claimed).toHaveLength(2);
    const [row] = await limitList(t.pool);
    expect(row!.running).toBe(3);
    const processing = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE status = 'processing'`.execute(t.db);
    expect(Number(processing.rows[0]!.n)).toBe(3);
  });

  it('claims that look at part of the list keep the rest: each takes exactly the room there is, and every running lease stays listed once', async () => {
    const bound = 40;
    const limit = defineLimit('api', { concurrency: bound });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, items(600));
    // a fixed sequence, so that a failure replays
    const next = seeded(0x2545f491);
    for (let step = 0; step < 80; step++) {
      const running = await sql<{ id: string; lease_version: string }>`
        SELECT id, lease_version FROM leasehold.task WHERE status = 'processing' ORDER BY id`.execute(t.db);
      // some leases end, anywhere in the list: done, released back to pending, or done and purged
      const ending = running.rows.filter(() => next(3) === 0).map((r) => ({ id: String(r.id), leaseVersion: Number(r.lease_version) }));
      const how = next(3);
      if (ending.length > 0) await finish(ending, how === 1 ? toReleased('test') : toDone());
      if (how === 2) await sql`DELETE FROM leasehold.task WHERE status = 'done'`.execute(t.db);
      const before = await sql<{ running: string; ready: string }>`
        SELECT count(*) FILTER (WHERE status = 'processing') AS running,
               count(*) FILTER (WHERE status = 'pending' AND NOT scheduled) AS ready FROM leasehold.task`.execute(t.db);
      const batch = 1 + next(24);
      const taken = (await claimUnder(['api'], batch)).claimed.length;
      const room = bound - Number(before.rows[0]!.running);
      expect(taken, `step ${step}: batch ${batch}, room ${room}`).toBe(Math.min(batch, room, Number(before.rows[0]!.ready)));
      const list = await sql<{ ids: string[]; versions: string[]; keys: string[] }>`
        SELECT holder_ids::text[] AS ids, holder_versions::text[] AS versions, holder_keys AS keys FROM leasehold.task_limit WHERE name = 'api'`.execute(t.db);
      const { ids, versions, keys } = list.rows[0]!;
      expect(versions).toHaveLength(ids.length);
      expect(keys).toHaveLength(ids.length);
      // (a lease that is over may stay listed beside its task's new one until a claim looks that far)
      const entries = ids.map((id, i) => `${id}@${versions[i]}`);
      const now = await sql<{ id: string; lease_version: string }>`
        SELECT id, lease_version FROM leasehold.task WHERE status = 'processing'`.execute(t.db);
      expect(now.rows.length).toBeLessThanOrEqual(bound);
      for (const r of now.rows) {
        const lease = `${r.id}@${r.lease_version}`;
        expect(entries.filter((e) => e === lease), `step ${step}: lease ${lease} listed once`).toHaveLength(1);
      }
    }
  });

  it('a task released while the limit has room is taken again by a claim of one, past its old entry', async () => {
    const limit = defineLimit('api', { concurrency: 2 });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, items(1));
    const [first] = (await claimUnder(['api'], 1)).claimed;
    await finish([first!], toReleased('test'));
    // back to pending through the scheduled rows: one claim promotes it, the next may take it
    const promoting = await claimUnder(['api'], 1);
    expect(promoting.claimed).toHaveLength(0);
    expect(promoting.promoted).toBe(1);
    // the list still has room for one: the claim looks at none of it, and must not pass over the task
    const [again] = (await claimUnder(['api'], 1)).claimed;
    expect(again?.id).toBe(first!.id);
    expect((await claimUnder(['api'], 1)).claimed).toHaveLength(0);
    await finish([again!], toRetry(0, 'again'));
    expect((await claimUnder(['api'], 1)).promoted).toBe(1);
    expect((await claimUnder(['api'], 1)).claimed.map((r) => r.id)).toEqual([first!.id]);
  });

  it('a finished task purged while it was still listed frees its slot', async () => {
    const limit = defineLimit('api', { concurrency: 2 });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, items(4));
    const first = await claimUnder(['api']);
    expect(first.claimed).toHaveLength(2);
    await finish(first.claimed.slice(0, 1));
    // retention deletes finished rows, whatever the limit's list still says
    await sql`DELETE FROM leasehold.task WHERE id = ${first.claimed[0]!.id}`.execute(t.db);
    expect((await claimUnder(['api'])).claimed).toHaveLength(1);
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
  });

  it('rows under a limit are left alone by a claim that does not serve it', async () => {
    const limit = defineLimit('api', { concurrency: 5 });
    const limited = taskUnder('limited', limit);
    const free = defineTask<{ n: number }>('free', { handler: () => {} });
    await register(limit, ['limited']);
    await enqueueMany(t.pool, limited, items(3));
    await enqueueMany(t.pool, free, items(3));
    const plain = await leaseClaim(t.pool, table, { owner: 'test', batch: 16, leaseMs: 60_000 });
    expect(plain.claimed.map((c) => c.name)).toEqual(['free', 'free', 'free']);
    const served = await claimUnder(['api']);
    expect(served.claimed.map((c) => c.name)).toEqual(['limited', 'limited', 'limited']);
  });

  it('an expired lease frees its slot: the crashed worker\'s task runs again within the limit', async () => {
    const limit = defineLimit('api', { concurrency: 1 });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, items(2));
    const [crashed] = (await claimUnder(['api'])).claimed;
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 s' WHERE id = ${crashed!.id}`.execute(t.db);
    const again = await claimUnder(['api']);
    // one slot: the expired row and the other pending row compete for it, by id
    expect(again.claimed.map((c) => [c.id, c.leaseVersion])).toEqual([[crashed!.id, 2]]);
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
    // the stale holder is refused by the fence and frees nothing
    expect((await finish([crashed!]))[0]!.won).toBe(false);
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
  });

  it('a stalled worker whose heartbeat extends its expired lease holds its slot again', async () => {
    // the lease expires, so a claim of the limit's other type takes its slot and writes the
    // bookkeeping; then the stalled worker's heartbeat wins (nobody took its row over): both
    // run, and the limit's room is what that leaves, none
    const limit = defineLimit('api', { concurrency: 2 });
    const stalled = taskUnder('call-a', limit);
    const other = taskUnder('call-b', limit);
    await register(limit, ['call-a', 'call-b']);
    await enqueueMany(t.pool, stalled, items(1));
    await enqueueMany(t.pool, other, items(3));
    const [held] = (await leaseClaim(t.pool, table, { owner: 'slow', batch: 1, leaseMs: 60_000, names: ['call-a'], flows: ['api'] })).claimed;
    await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 s' WHERE id = ${held!.id}`.execute(t.db);
    const second = await leaseClaim(t.pool, table, { owner: 'test', batch: 1, leaseMs: 60_000, names: ['call-b'], flows: ['api'] });
    expect(second.claimed.map((c) => c.name)).toEqual(['call-b']);
    const extended = await leaseExtendMany(t.pool, table, [{ id: held!.id, leaseVersion: held!.leaseVersion, leaseMs: 60_000 }]);
    expect(extended.size).toBe(1);
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
    const [running] = await limitList(t.pool);
    expect(running!.running).toBe(2);
    // and it frees its slot when it finishes, as any holder does
    await finish([held!]);
    expect((await claimUnder(['api'])).claimed.map((c) => c.name)).toEqual(['call-b']);
  });

  it('a worker that runs some of a limit\'s task types takes its own, within the shared bound', async () => {
    const shared = defineLimit('api', { concurrency: 1 });
    const a = taskUnder('call-a', shared);
    const b = taskUnder('call-b', shared);
    await register(shared, ['call-a', 'call-b']);
    await enqueueMany(t.pool, b, items(3)); // ranked first, run elsewhere
    await enqueueMany(t.pool, a, items(2));
    const mine = await leaseClaim(t.pool, table, { owner: 'test', batch: 16, leaseMs: 60_000, names: ['call-a'], flows: ['api'] });
    expect(mine.claimed.map((c) => c.name)).toEqual(['call-a']);
    // the one slot is taken, whoever asks
    expect((await claimUnder(['api'])).claimed).toHaveLength(0);
  });

  it('takes any limit name, quotes and dollars included', async () => {
    const odd = defineLimit("it's $lh$ odd $lh0$", { concurrency: 1 });
    const task = taskUnder('call-odd', odd);
    await register(odd, ['call-odd']);
    await enqueueMany(t.pool, task, items(2));
    expect((await claimUnder([odd.name])).claimed).toHaveLength(1);
    expect((await claimUnder([odd.name])).claimed).toHaveLength(0);
  });

  it('a new bound applies at the next registration', async () => {
    const task = taskUnder('call-api', defineLimit('api', { concurrency: 1 }));
    await register(defineLimit('api', { concurrency: 1 }), ['call-api']);
    await enqueueMany(t.pool, task, items(5));
    expect((await claimUnder(['api'])).claimed).toHaveLength(1);
    await register(defineLimit('api', { concurrency: 3 }), ['call-api']);
    expect((await claimUnder(['api'])).claimed).toHaveLength(2);
  });
});

describe('a per-key limit', () => {
  it('holds each key to K leases; other keys are not held back by a full one', async () => {
    const limit = defineLimit('tenant', { concurrencyPerKey: 2 });
    const task = taskUnder('sync', limit);
    await register(limit, ['sync']);
    await enqueueMany(t.pool, task, items(10, () => 'slow'));
    await enqueueMany(t.pool, task, items(6, (i) => `k${i % 3}`));
    const first = await claimUnder(['tenant'], 64);
    const perKey = async () => {
      const { rows } = await sql<{ flow_key: string; n: string }>`
        SELECT flow_key, count(*) AS n FROM leasehold.task WHERE status = 'processing' GROUP BY 1 ORDER BY 1`.execute(t.db);
      return Object.fromEntries(rows.map((r) => [r.flow_key, Number(r.n)]));
    };
    expect(first.claimed).toHaveLength(8);
    expect(await perKey()).toEqual({ k0: 2, k1: 2, k2: 2, slow: 2 });
    expect((await claimUnder(['tenant'], 64)).claimed).toHaveLength(0);
    const slow = first.claimed.find((c) => c.id === first.claimed.map((x) => x.id).sort()[0])!;
    await finish([slow]);
    const next = await claimUnder(['tenant'], 64);
    expect(next.claimed).toHaveLength(1);
  });

  it('enqueue needs a limitKey under a keyed limit, and refuses one otherwise', async () => {
    const keyed = taskUnder('keyed', defineLimit('tenant', { concurrencyPerKey: 1 }));
    const plain = taskUnder('plain', defineLimit('api', { concurrency: 1 }));
    await expect(enqueueMany(t.pool, keyed, [{ payload: { n: 1 } }])).rejects.toMatchObject({ code: 'CONFIG', option: 'limitKey' });
    await expect(enqueueMany(t.pool, plain, [{ payload: { n: 1 }, limitKey: 'a' }])).rejects.toMatchObject({ code: 'CONFIG', option: 'limitKey' });
  });
});

describe('a rate limit', () => {
  it('starts at most M per period, paced over it; the claim says when the next may start', async () => {
    // 20 an hour: one every 3 minutes on average, at most 3 at once (a tenth of 20, plus one)
    const limit = defineLimit('api', { rate: { limit: 20, period: '1h' } });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, items(30));
    const first = await claimUnder(['api']);
    expect(first.claimed).toHaveLength(3);
    // finishing frees no start: a rate counts starts, not running tasks
    await finish(first.claimed);
    const second = await claimUnder(['api']);
    expect(second.claimed).toHaveLength(0);
    expect(second.waitMs).toBeGreaterThan(170_000);
    expect(second.waitMs).toBeLessThanOrEqual(180_000);
    // three minutes on, the next
    await sql`UPDATE leasehold.task_limit SET rate_tat = rate_tat - 180000,
                                               start_at = ARRAY(SELECT s - 180000 FROM unnest(start_at) AS s ORDER BY s)`.execute(t.db);
    expect((await claimUnder(['api'])).claimed).toHaveLength(1);
    // twenty in the last hour: none until the oldest is an hour old, whatever the pace allows
    await sql`UPDATE leasehold.task_limit SET rate_tat = NULL,
                start_at = ARRAY(SELECT date_part('epoch', now()) * 1000 - 3000000 + g FROM generate_series(1, 20) AS g),
                start_keys = array_fill(''::text, ARRAY[20])`.execute(t.db);
    const spent = await claimUnder(['api']);
    expect(spent.claimed).toHaveLength(0);
    expect(spent.waitMs).toBeGreaterThan(550_000);
    // the oldest start sits 1 ms past 50 minutes ago (g = 1), as of the UPDATE's now()
    expect(spent.waitMs).toBeLessThanOrEqual(600_001);
    // the tasks waited without spending an attempt
    const { rows } = await sql<{ attempts: number; n: string }>`SELECT attempts, count(*) AS n FROM leasehold.task GROUP BY 1 ORDER BY 1`.execute(t.db);
    expect(rows.map((r) => [r.attempts, Number(r.n)])).toEqual([[0, 26], [1, 4]]);
  });

  it('per key: a key over its rate waits, the others start', async () => {
    const limit = defineLimit('tenant', { ratePerKey: { limit: 1, period: '1h' } });
    const task = taskUnder('sync', limit);
    await register(limit, ['sync']);
    await enqueueMany(t.pool, task, items(4, (i) => (i < 2 ? 'a' : `b${i}`)));
    expect((await claimUnder(['tenant'])).claimed).toHaveLength(3);
    const last = await claimUnder(['tenant']);
    expect(last.claimed).toHaveLength(0);
    expect(last.waitMs).toBeGreaterThan(3_500_000);
  });
});

describe('rows scheduled for later under a limit', () => {
  it('are promoted once due, then claimed within the limit', async () => {
    const limit = defineLimit('api', { concurrency: 1 });
    const task = taskUnder('call-api', limit);
    await register(limit, ['call-api']);
    await enqueueMany(t.pool, task, [{ payload: { n: 1 }, delay: '1h' }, { payload: { n: 2 }, delay: '1h' }]);
    expect((await claimUnder(['api'])).promoted).toBe(0);
    await sql`UPDATE leasehold.task SET available_at = now() - interval '1 s'`.execute(t.db);
    const promoting = await claimUnder(['api']);
    expect(promoting.promoted).toBe(2);
    expect((await claimUnder(['api'])).claimed).toHaveLength(1);
  });
});

describe('claims at production sizes under limits (issue 11)', () => {
  const BATCH = 50;

  it('50,000 tasks over a full limit and 50,000 behind a full key: the claim reads none of them', async () => {
    const api = defineLimit('api', { concurrency: 2 });
    const tenant = defineLimit('tenant', { concurrencyPerKey: 2 });
    const call = taskUnder('call-api', api);
    const sync = taskUnder('sync', tenant);
    const free = defineTask<{ n: number }>('free', { handler: () => {} });
    await register(api, ['call-api']);
    await register(tenant, ['sync']);
    await enqueueMany(t.pool, call, items(50_000));
    await enqueueMany(t.pool, sync, items(50_000, () => 'slow'));
    const flows = ['api', 'tenant'];
    // fill the limit and the slow key
    expect((await claimUnder(flows, BATCH)).claimed).toHaveLength(4);
    await enqueueMany(t.pool, sync, items(100, (i) => `k${i % 50}`));
    await enqueueMany(t.pool, free, items(10));
    await sql`ANALYZE leasehold.task`.execute(t.db);

    const { claimPlanReads, PLAN_KINDS } = await import('../claim-plan.js');
    // planned for its values, and generic (a worker's claims from their first: Listener)
    for (const plan of PLAN_KINDS) {
      const reads = await claimPlanReads(t.pool, table, BATCH, undefined, flows, plan);
      // 100 claimable keyed rows over 50 keys, 10 unlimited: one probe per key, the batch, the
      // holders — not the 100,000 over their bounds
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(6 * BATCH);
      expect(reads.rowsDiscarded, reads.plan).toBeLessThanOrEqual(BATCH);
    }
    const claimed = await claimUnder(flows, 256);
    expect(claimed.claimed.filter((c) => c.name === 'sync')).toHaveLength(100);
    expect(claimed.claimed.filter((c) => c.name === 'free')).toHaveLength(10);
    expect(claimed.claimed.filter((c) => c.name === 'call-api')).toHaveLength(0);
  }, 120_000);
});
