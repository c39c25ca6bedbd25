// A worker draining ordered groups claims when its own writes hand the groups their next heads,
// not in between: between a write's start and its commit nothing new of those groups is
// claimable, and the wake guard, finding the worker's own write holding the wake lock, used to
// claim again every few milliseconds (an ordered outbox drain of 20,000 messages sent 154 arms
// and 173 claims for 40 fenced writes). Statements counted on the worker's own pool.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueueMany } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';
import { countingPool } from '../counting-pool.js';

const t = useTestDatabase();
const track = useWorkers();
const GROUPS = 100;
const PER_GROUP = 20;

describe('an ordered drain', () => {
  it(`of ${(GROUPS * PER_GROUP).toLocaleString('en')} tasks over ${GROUPS} groups claims after its writes, runs each group in order`, async () => {
    const seen = new Map<string, number[]>();
    const step = defineTask<{ g: number; n: number }>('ordered-drain', {
      handler: ({ g, n }) => void seen.set(String(g), [...(seen.get(String(g)) ?? []), n]),
    });
    const items = Array.from({ length: GROUPS * PER_GROUP }, (_, i) => ({
      payload: { g: i % GROUPS, n: Math.floor(i / GROUPS) },
      groupKey: `g-${i % GROUPS}`,
    }));
    await enqueueMany(t.pool, step, items);

    const { pool, sent } = countingPool(t.url);
    try {
      const worker = track(createWorker({ pool, tasks: [step], concurrency: 8 }));
      const idle = nextEvent(worker, 'worker:idle', () => true, 60_000);
      await worker.start();
      await idle;
      await worker.stop();
    } finally {
      await pool.end();
    }
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.task WHERE status = 'done'`.execute(t.db);
    expect(Number(rows[0]!.n)).toBe(GROUPS * PER_GROUP);
    for (const [g, ns] of seen) expect(ns, `group ${g}`).toEqual(Array.from({ length: PER_GROUP }, (_, n) => n));

    const count = (pattern: RegExp) => sent.filter((text) => pattern.test(text)).length;
    const arms = count(/pg_try_advisory_xact_lock/);
    const claims = count(/FOR UPDATE SKIP LOCKED/);
    const writes = count(/SET status = 'done'/);
    console.log(`[ordered drain] ${claims} claims, ${arms} arms, ${writes} fenced writes`);
    expect(arms, 'wake-guard arms').toBeLessThanOrEqual(writes);
  });
});
