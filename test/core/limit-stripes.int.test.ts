// A large concurrency limit keeps its slots in stripes (core migration 20, docs/flow-control.md
// "How a large concurrency limit is kept"): claims of one limit run side by side, each stripe's
// slots are counted from its processing rows, and the bound holds through every way a row leaves
// processing, through claims racing each other, and through a change of bound or of kind.
import { sql } from 'kysely';
import pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import { createWorker, defineLimit, defineTask, enqueueMany, limitList, taskTable, type LimitDefinition, type TaskDefinition } from '@leasehold/core';
import { leaseClaim, leaseFinalizeMany, limitRegisterMany, toDone, toReleased, toRetry } from '@leasehold/core/internal';
import { useTestDatabase } from '../fixtures.js';
import { seeded } from '../seeded.js';

const t = useTestDatabase();
const table = taskTable();
const BOUND = 128;

beforeEach(async () => {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, leasehold.task_limit, leasehold.task_limit_stripe, leasehold.task_worker`.execute(t.db);
});

function taskUnder(name: string, limit: LimitDefinition): TaskDefinition<{ n: number }> {
  return defineTask<{ n: number }>(name, { limit, handler: () => {} });
}

async function register(limit: LimitDefinition, names: string[]): Promise<string[]> {
  return limitRegisterMany(t.pool, table, 'test', [{ limit, taskNames: names }], names);
}

/**
 * Which claim statement the tests below send: the whole one, or the striped-only one a worker
 * sends first (followed, as the worker does, by the whole one when it says a served limit with
 * rows is kept in its list). Each describe block runs with both.
 */
const MODES = [
  { mode: 'the whole claim', stripedOnly: false },
  { mode: 'the striped-only claim', stripedOnly: true },
];
let stripedOnly = false;

async function claimUnder(flows: string[], batch = 16, executor: pg.Pool | pg.PoolClient = t.pool) {
  const input = { owner: 'test', batch, leaseMs: 60_000, flows };
  if (!stripedOnly) return leaseClaim(executor, table, input);
  const lean = await leaseClaim(executor, table, { ...input, stripedOnly: true });
  if (!lean.listed || lean.claimed.length === batch) return lean;
  const whole = await leaseClaim(executor, table, { ...input, batch: batch - lean.claimed.length });
  return { ...whole, claimed: [...lean.claimed, ...whole.claimed], reaped: [...lean.reaped, ...whole.reaped], promoted: lean.promoted + whole.promoted };
}

/**
 * Claims until a claim takes, reaps and promotes nothing and asks for no claim at once (`waitMs` 0):
 * what a worker does (a reap frees slots the same claim could not see free; the worker hears of
 * them from the slot-freed wake-up).
 */
async function claimAll(flows: string[], batch = 16) {
  const taken: { id: string; leaseVersion: number }[] = [];
  for (let i = 0; i < 1_000; i++) {
    const r = await claimUnder(flows, batch);
    taken.push(...r.claimed);
    if (r.claimed.length === 0 && r.reaped.length === 0 && r.promoted === 0 && r.waitMs !== 0) return taken;
  }
  throw new Error('claims never settled');
}

async function finish(rows: readonly { id: string; leaseVersion: number }[], to = toDone()) {
  return leaseFinalizeMany(t.pool, table, rows.map((r) => ({ id: r.id, leaseVersion: r.leaseVersion, transition: to, groupKey: null })));
}

async function processing(): Promise<number> {
  const r = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE status = 'processing'`.execute(t.db);
  return Number(r.rows[0]!.n);
}

async function stripes(name: string): Promise<{ stripe: number; capacity: number }[]> {
  const r = await sql<{ stripe: number; capacity: number }>`
    SELECT s.stripe, s.capacity FROM leasehold.task_limit_stripe AS s JOIN leasehold.task_limit AS l ON l.name = s.name
    WHERE s.name = ${name} AND l.stripes > 0 ORDER BY s.stripe`.execute(t.db);
  return r.rows;
}

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { n: i } }));

/** Registers the limit `api` of `bound` for `call-api`, with `rows` of that task waiting under it. */
async function apiWithRows(rows: number, bound = BOUND): Promise<void> {
  const limit = defineLimit('api', { concurrency: bound });
  await register(limit, ['call-api']);
  await enqueueMany(t.pool, taskUnder('call-api', limit), items(rows));
}

describe.each(MODES)('with $mode', (m) => {
  beforeEach(() => {
    stripedOnly = m.stripedOnly;
  });

  describe('a concurrency limit kept in stripes', () => {
    it('is kept in stripes from a bound of 64, and a smaller or keyed or rated limit in its list', async () => {
      await register(defineLimit('big', { concurrency: 64 }), ['a']);
      await register(defineLimit('small', { concurrency: 63 }), ['b']);
      await register(defineLimit('rated', { concurrency: 500, rate: { limit: 10, period: '1s' } }), ['c']);
      await register(defineLimit('keyed', { concurrency: 500, concurrencyPerKey: 2 }), ['d']);
      expect(await stripes('big')).toEqual([{ stripe: 0, capacity: 32 }, { stripe: 1, capacity: 32 }]);
      expect(await stripes('small')).toEqual([]);
      expect(await stripes('rated')).toEqual([]);
      expect(await stripes('keyed')).toEqual([]);
    });

    it('claims take the room there is, and every way out of processing frees a slot', async () => {
      const limit = defineLimit('api', { concurrency: BOUND });
      const task = taskUnder('call-api', limit);
      await register(limit, ['call-api']);
      await enqueueMany(t.pool, task, items(1_000));
      // a fixed sequence, so that a failure replays
      const next = seeded(0x1b873593);
      let running: { id: string; leaseVersion: number }[] = [];
      for (let step = 0; step < 40; step++) {
        const end = running.splice(0, next(running.length + 1));
        const way = next(5);
        if (way === 0) await finish(end);
        else if (way === 1) await finish(end, toRetry(0, 'again'));
        else if (way === 2) await finish(end, toReleased('shutdown'));
        else if (way === 3) await sql`DELETE FROM leasehold.task WHERE id = ANY(${end.map((r) => r.id)}::bigint[])`.execute(t.db);
        // a lease that ran out on its last attempt: the claim reaps it to dead
        else await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second', attempts = max_attempts
                       WHERE id = ANY(${end.map((r) => r.id)}::bigint[])`.execute(t.db);
        const before = await processing();
        running.push(...(await claimAll(['api'], 1 + next(64))));
        const after = await processing();
        const ready = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE status = 'pending'`.execute(t.db);
        expect(after, `step ${step}`).toBeLessThanOrEqual(BOUND);
        // claimed as soon as the limit has room: all of it, unless the rows ran out
        if (Number(ready.rows[0]!.n) > 0) expect(after, `step ${step}: ${before} before`).toBe(BOUND);
        const live = await sql<{ id: string }>`SELECT id FROM leasehold.task WHERE status = 'processing'`.execute(t.db);
        const liveIds = new Set(live.rows.map((r) => String(r.id)));
        running = running.filter((r) => liveIds.has(r.id));
      }
      const [row] = await limitList(t.pool);
      expect(row!.running).toBe(await processing());
    });

    it('two claims of one limit run side by side, and together stay within the bound', async () => {
      await apiWithRows(1_000);
      const held = await t.pool.connect();
      try {
        await held.query('BEGIN');
        // a claim whose transaction stays open holds the stripe it locked
        const first = await claimUnder(['api'], 1_024, held);
        expect(first.claimed).toHaveLength(BOUND / 2);
        // with one row lock for the whole limit, this claim would wait for that transaction
        const second = await claimUnder(['api'], 1_024);
        expect(second.claimed).toHaveLength(BOUND / 2);
        await held.query('COMMIT');
      } finally {
        held.release();
      }
      expect(await processing()).toBe(BOUND);
      expect((await claimAll(['api'], 1_024))).toHaveLength(0);
    });

    it('a claim whose snapshot is older than another claim of the same stripe does not count past it', async () => {
      await apiWithRows(1_000);
      // Many claimers at once, each claim a few rows, each finishing some of what it took; a
      // sampler reads the committed count of processing rows the whole time.
      let over = 0;
      let samples = 0;
      let stop = false;
      const sampler = (async () => {
        while (!stop) {
          const n = await processing();
          samples++;
          if (n > BOUND) over = Math.max(over, n);
        }
      })();
      const claimer = async (k: number) => {
        for (let i = 0; i < 80; i++) {
          const r = await claimUnder(['api'], 8 + ((i * 7 + k) % 40));
          if (i % 3 === k % 3) await finish(r.claimed.slice(0, Math.ceil(r.claimed.length / 2)));
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(claimer));
      stop = true;
      await sampler;
      expect(samples).toBeGreaterThan(0);
      expect(over, 'most processing rows seen at once').toBe(0);
      expect(await processing()).toBeLessThanOrEqual(BOUND);
    });

    it('workers in one process never run more handlers at once than the bound', async () => {
      const limit = defineLimit('api', { concurrency: 64 });
      let running = 0;
      let most = 0;
      let done = 0;
      let allDone: () => void = () => {};
      const finished = new Promise<void>((resolve) => (allDone = resolve));
      const task = defineTask<{ n: number }>('call-api', {
        limit,
        handler: async () => {
          most = Math.max(most, ++running);
          // long enough that two workers' claims of the two stripes overlap in time, whatever the load
          await new Promise((r) => setTimeout(r, 20 + (done % 10)));
          running--;
          if (++done === 1_000) allDone();
        },
      });
      await register(limit, ['call-api']);
      await enqueueMany(t.pool, task, items(1_000));
      const pools = [0, 1, 2].map(() => new pg.Pool({ connectionString: t.url, max: 4 }));
      const workers = pools.map((pool) => createWorker({ pool, tasks: [task], concurrency: 40, logger: null }));
      try {
        await Promise.all(workers.map((w) => w.start()));
        await within(finished, 60_000);
        expect(done).toBe(1_000);
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
        await Promise.all(pools.map((p) => p.end()));
      }
      expect(most).toBeLessThanOrEqual(64);
      // the three workers' 120 handler slots were more than the bound: it was reached
      expect(most).toBeGreaterThan(32);
    });

    it('an expired lease taken over keeps its slot: the claim takes no new row for it', async () => {
      await apiWithRows(200, 64);
      const first = await claimAll(['api'], 64);
      expect(first).toHaveLength(64);
      // a crashed worker's 10 leases run out
      await sql`UPDATE leasehold.task SET lease_until = now() - interval '1 second'
                WHERE id = ANY(${first.slice(0, 10).map((r) => r.id)}::bigint[])`.execute(t.db);
      const again = await claimAll(['api'], 64);
      expect(again.map((r) => r.id).sort()).toEqual(first.slice(0, 10).map((r) => r.id).sort());
      expect(again.every((r) => r.leaseVersion === 2)).toBe(true);
      expect(await processing()).toBe(64);
    });

    it('beside a snapshot held open, claims keep within the bound and take all the room as rows churn through', async () => {
      await apiWithRows(3_000);
      // a long transaction elsewhere (a report, a dump): every row that finishes after it stays
      // in the indexes the claims walk, and every stripe's version it saw stays readable
      const held = await t.pool.connect();
      try {
        await held.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await held.query('SELECT count(*) FROM leasehold.task');
        let running = await claimAll(['api'], 100);
        let finished = 0;
        while (running.length > 0) {
          expect(running.length, `${finished} finished`).toBeLessThanOrEqual(BOUND);
          // room for all of it, unless the rows ran out
          if (finished + BOUND <= 3_000) expect(running.length, `${finished} finished`).toBe(BOUND);
          const ending = running.slice(0, 100);
          await finish(ending);
          finished += ending.length;
          running = [...running.slice(100), ...(await claimAll(['api'], 100))];
          expect(await processing()).toBe(running.length);
        }
        expect(finished).toBe(3_000);
      } finally {
        await held.query('ROLLBACK');
        held.release();
      }
    });

    it('a row that keeps running while later rows come and go is still counted, however far the stripe’s low has moved', async () => {
      // a stripe is counted from its low (migration 21): the least id of its running rows, as the
      // last claim that saw them all found it. The two oldest rows of each stripe keep running
      // while 15 generations of the others run and finish after them.
      await apiWithRows(2_000, 64);
      const first = await claimAll(['api'], 64);
      expect(first).toHaveLength(64);
      const slots = await sql<{ id: string; slot: number }>`
        SELECT id, flow_slot AS slot FROM leasehold.task WHERE status = 'processing' ORDER BY id`.execute(t.db);
      const kept = new Set([0, 1].flatMap((stripe) => slots.rows.filter((r) => r.slot === stripe).slice(0, 2).map((r) => String(r.id))));
      expect(kept.size).toBe(4);
      let running = first.filter((r) => !kept.has(r.id));
      for (let generation = 0; generation < 15; generation++) {
        await finish(running);
        running = await claimAll(['api'], 64);
        expect(running, `generation ${generation}`).toHaveLength(60);
        expect(await processing()).toBe(64);
      }
      const lows = await sql<{ low: string }>`SELECT low FROM leasehold.task_limit_stripe WHERE name = 'api' ORDER BY stripe`.execute(t.db);
      // (the stripes' lows stayed at the kept rows: each is at most the least kept id of its stripe)
      for (const stripe of [0, 1]) {
        const least = Math.min(...slots.rows.filter((r) => r.slot === stripe && kept.has(String(r.id))).map((r) => Number(r.id)));
        expect(Number(lows.rows[stripe]!.low)).toBeLessThanOrEqual(least);
      }
    });

    it('a row taken into a stripe by a worker of the previous version, below the stripe’s low, is counted', async () => {
      await apiWithRows(200, 64);
      const first = await claimAll(['api'], 64);
      await finish(first);
      const second = await claimAll(['api'], 64);
      expect(second).toHaveLength(64);
      // a claim of migration 20's code: it takes a row into stripe 0 (here the oldest row, done
      // before, as a retry would come back with its old id) and writes the stripe without low_at,
      // after one row of that stripe finished
      const [leaving] = (await sql<{ id: string; lease_version: number }>`
        SELECT id, lease_version FROM leasehold.task WHERE status = 'processing' AND flow_slot = 0 ORDER BY id LIMIT 1`.execute(t.db)).rows;
      await finish([{ id: String(leaving!.id), leaseVersion: leaving!.lease_version }]);
      const oldest = first.map((r) => Number(r.id)).sort((a, b) => a - b)[0]!;
      await sql`UPDATE leasehold.task SET status = 'processing', flow_slot = 0, lease_version = lease_version + 1,
                       lease_until = now() + interval '1 minute', attempts = attempts + 1
                WHERE id = ${oldest}`.execute(t.db);
      await sql`UPDATE leasehold.task_limit_stripe SET claims = claims + 1, taken = 1, prior = xmin WHERE name = 'api' AND stripe = 0`.execute(t.db);
      const low = await sql<{ low: string }>`SELECT low FROM leasehold.task_limit_stripe WHERE name = 'api' AND stripe = 0`.execute(t.db);
      expect(Number(low.rows[0]!.low)).toBeGreaterThan(oldest);
      // the stripe is full: counted from its low, it would have room for one
      expect(await claimAll(['api'], 64)).toHaveLength(0);
      expect(await processing()).toBe(64);
    });
  });

  describe('beside workers of an earlier version', () => {
    it('a limit stays in its list while one is alive, and goes into stripes at the first start after', async () => {
      const limit = defineLimit('api', { concurrency: BOUND });
      const task = taskUnder('call-api', limit);
      // an earlier version's worker: alive, and it knows nothing of stripes
      await sql`INSERT INTO leasehold.task_worker (owner, accepts) VALUES ('old', '{"call-api": [1]}')`.execute(t.db);
      await register(limit, ['call-api']);
      expect(await stripes('api')).toEqual([]);
      await enqueueMany(t.pool, task, items(1_000));
      // its claims (those of the list) and this version's agree on the bound
      expect(await claimAll(['api'], 100)).toHaveLength(BOUND);
      // it stopped (or its row went stale): the next start puts the limit in stripes, with its
      // running rows in them
      await sql`UPDATE leasehold.task_worker SET seen_at = now() - interval '10 minutes' WHERE owner = 'old'`.execute(t.db);
      await register(limit, ['call-api']);
      expect(await stripes('api')).toHaveLength(2);
      expect(await claimAll(['api'], 100)).toHaveLength(0);
      // one comes back (a rollback): the next start of this version moves the slots back to the list
      await sql`UPDATE leasehold.task_worker SET seen_at = now() WHERE owner = 'old'`.execute(t.db);
      await register(limit, ['call-api']);
      expect(await stripes('api')).toEqual([]);
      const [row] = await sql<{ n: number }>`SELECT cardinality(holder_ids) AS n FROM leasehold.task_limit WHERE name = 'api'`.execute(t.db).then((r) => r.rows);
      expect(row!.n).toBe(BOUND);
      expect(await claimAll(['api'], 100)).toHaveLength(0);
    });
  });

  describe('a change of bound or of kind', () => {
    it('into stripes and back: the rows running then keep their slots', async () => {
      const rated = defineLimit('api', { concurrency: BOUND, rate: { limit: 10_000, period: '1s' } });
      const task = taskUnder('call-api', rated);
      await register(rated, ['call-api']);
      await enqueueMany(t.pool, task, items(1_000));
      const listed = await claimAll(['api'], 100);
      expect(listed).toHaveLength(BOUND);
      await finish(listed.slice(0, 28));
      // the rate dropped: kept in stripes, with the 100 running rows in them
      const plain = defineLimit('api', { concurrency: BOUND });
      await register(plain, ['call-api']);
      expect(await stripes('api')).toHaveLength(2);
      expect(await claimAll(['api'], 100)).toHaveLength(28);
      expect(await processing()).toBe(BOUND);
      // and back: the running rows listed
      await finish((await sql<{ id: string; lease_version: number }>`SELECT id, lease_version FROM leasehold.task WHERE status = 'processing' ORDER BY id LIMIT 20`
        .execute(t.db)).rows.map((r) => ({ id: String(r.id), leaseVersion: Number(r.lease_version) })));
      await register(rated, ['call-api']);
      expect(await stripes('api')).toEqual([]);
      expect(await claimAll(['api'], 100)).toHaveLength(20);
      expect(await processing()).toBe(BOUND);
    });

    it('a bound lowered below what runs starts nothing until fewer run, then splits again', async () => {
      const limit = defineLimit('api', { concurrency: BOUND });
      const task = taskUnder('call-api', limit);
      await register(limit, ['call-api']);
      await enqueueMany(t.pool, task, items(1_000));
      const running = await claimAll(['api'], 100);
      expect(running).toHaveLength(BOUND);
      const lower = defineLimit('api', { concurrency: 64 });
      await register(lower, ['call-api']);
      expect(await stripes('api')).toEqual([{ stripe: 0, capacity: 64 }, { stripe: 1, capacity: 0 }]);
      // 128 run: none may start, in either stripe, as each of the first 70 ends
      for (let i = 0; i < 70; i += 10) {
        await finish(running.slice(i, i + 10));
        const started = await claimAll(['api'], 100);
        expect(started, `${i + 10} ended`).toHaveLength(Math.max(0, 64 - (BOUND - (i + 10))));
      }
      expect(await processing()).toBe(64);
      // the next start finds no more than the bound running: the bound is split again
      await register(lower, ['call-api']);
      expect(await stripes('api')).toEqual([{ stripe: 0, capacity: 32 }, { stripe: 1, capacity: 32 }]);
      await finish(running.slice(70, 80));
      expect(await claimAll(['api'], 100)).toHaveLength(10);
      expect(await processing()).toBe(64);
    });
  });
});

describe('the striped-only claim', () => {
  it('takes nothing under a limit kept in its list and says so, as the whole claim does; a striped limit says nothing', async () => {
    const big = defineLimit('big', { concurrency: BOUND });
    const rated = defineLimit('rated', { concurrency: BOUND, rate: { limit: 10_000, period: '1s' } });
    await register(big, ['a']);
    await register(rated, ['b']);
    await enqueueMany(t.pool, taskUnder('a', big), items(10));
    await enqueueMany(t.pool, taskUnder('b', rated), items(10));
    const input = { owner: 'test', batch: 64, leaseMs: 60_000, flows: ['big', 'rated'] };
    const lean = await leaseClaim(t.pool, table, { ...input, stripedOnly: true });
    expect(lean.claimed).toHaveLength(10);
    expect(lean.listed).toBe(true);
    const whole = await leaseClaim(t.pool, table, input);
    expect(whole.claimed).toHaveLength(10);
    expect(whole.listed).toBe(true);
    // every row of both taken: neither limit has rows left, so neither claim has anything to say
    expect((await leaseClaim(t.pool, table, { ...input, stripedOnly: true })).listed).toBe(false);
    expect((await leaseClaim(t.pool, table, input)).listed).toBe(false);
  });

  it('a worker serving a limit kept in stripes and one kept in its list runs the tasks of both', async () => {
    const big = defineLimit('big', { concurrency: 64 });
    const rated = defineLimit('rated', { concurrency: 64, rate: { limit: 10_000, period: '1s' } });
    let done = 0;
    let allDone: () => void = () => {};
    const finished = new Promise<void>((resolve) => (allDone = resolve));
    const handler = () => {
      if (++done === 400) allDone();
    };
    const a = defineTask<{ n: number }>('a', { limit: big, handler });
    const b = defineTask<{ n: number }>('b', { limit: rated, handler });
    await enqueueMany(t.pool, a, items(200));
    await enqueueMany(t.pool, b, items(200));
    const worker = createWorker({ pool: t.pool, tasks: [a, b], concurrency: 16, logger: null });
    try {
      await worker.start();
      expect(await stripes('big')).toHaveLength(2);
      await within(finished, 60_000);
      expect(done).toBe(400);
    } finally {
      await worker.stop();
    }
  });

  it('a running worker goes on taking a limit that a start beside an earlier version moved into its list', async () => {
    const limit = defineLimit('api', { concurrency: BOUND });
    let done = 0;
    let waiting: { n: number; resolve: () => void } | undefined;
    const reached = (n: number) => new Promise<void>((resolve) => (done >= n ? resolve() : (waiting = { n, resolve })));
    const task = defineTask<{ n: number }>('call-api', {
      limit,
      handler: () => {
        done++;
        if (waiting !== undefined && done >= waiting.n) waiting.resolve();
      },
    });
    await enqueueMany(t.pool, task, items(100));
    const worker = createWorker({ pool: t.pool, tasks: [task], concurrency: 16, logger: null });
    try {
      await worker.start();
      expect(await stripes('api')).toHaveLength(2);
      await within(reached(100), 60_000);
      // an earlier version's worker comes back, and a start of this version beside it moves the
      // limit into its list: the running worker's claims must find its rows there
      await sql`INSERT INTO leasehold.task_worker (owner, accepts) VALUES ('old', '{"call-api": [1]}')`.execute(t.db);
      await register(limit, ['call-api']);
      expect(await stripes('api')).toEqual([]);
      await enqueueMany(t.pool, task, items(200));
      await within(reached(300), 60_000);
      expect(done).toBe(300);
    } finally {
      await worker.stop();
    }
  });
});

/** Resolves with `p`, or rejects once `ms` passed first. */
async function within(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms)));
  try {
    await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
