// Model-based property test of the lease state machine against the real database: random
// interleavings of claims by several simulated workers (one at a time and all at once),
// heartbeats, fenced finalizes of every outcome, lease expiry and reap, checked after every step
// against the reference model in lease-model.ts. Some tasks run under a limit (a global
// concurrency of 1 or 2), which the claims that serve it keep them within.
//
// Reproduce a failure with the seed fast-check prints: FAULTS_SEED=<seed> npx vitest run test/faults/state-machine.int.test.ts
// More runs locally: FAULTS_MODEL_RUNS=500.
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { recomputeGroupHeads, useTestDatabase } from '../fixtures.js';
import { leaseCommands } from './lease-commands.js';
import type { Real } from './lease-check.js';
import { LeaseModel, LIMIT, type ModelStats } from './lease-model.js';
import { envInt, summary } from './summary.js';

const t = useTestDatabase();

const RUNS = envInt('FAULTS_MODEL_RUNS', 60);
const STEPS = 30;

const taskSpec = fc.record({
  name: fc.constantFrom('a', 'b'),
  priority: fc.integer({ min: -1, max: 1 }),
  groupKey: fc.constantFrom(null, null, null, 'g1', 'g2'),
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  limited: fc.constantFrom(false, false, true),
});
type TaskSpec = typeof taskSpec extends fc.Arbitrary<infer T> ? T : never;

async function seedTasks(specs: readonly TaskSpec[], concurrency: number): Promise<string[]> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group, leasehold.task_limit RESTART IDENTITY`.execute(t.db);
  await sql`INSERT INTO leasehold.task_limit (name, concurrency) VALUES (${LIMIT}, ${concurrency})`.execute(t.db);
  const { rows } = await sql<{ id: string }>`
    INSERT INTO leasehold.task (name, priority, group_key, max_attempts, flow, flow_key)
    SELECT * FROM unnest(${specs.map((s) => s.name)}::text[], ${specs.map((s) => s.priority)}::int[],
                         ${specs.map((s) => s.groupKey)}::text[], ${specs.map((s) => s.maxAttempts)}::int[],
                         ${specs.map((s) => (s.limited ? LIMIT : null))}::text[], ${specs.map((s) => (s.limited ? '' : null))}::text[])
    RETURNING id::text`.execute(t.db);
  for (const group of new Set(specs.flatMap((s) => (s.groupKey === null ? [] : [s.groupKey])))) await recomputeGroupHeads(t.db, group);
  return rows.map((r) => r.id);
}

describe('the lease state machine against its reference model', () => {
  it('keeps every invariant over random claims, heartbeats, finalizes, expiries and reaps', async () => {
    const stats: ModelStats = {
      claimed: 0, reclaimedAfterExpiry: 0, reaped: 0, finalizeWon: 0, staleRefused: 0,
      expiredFinalizeWon: 0, heartbeatWon: 0, heartbeatRefused: 0, limitedClaimed: 0, promoted: 0,
    };
    const seed = process.env.FAULTS_SEED === undefined ? undefined : Number(process.env.FAULTS_SEED);
    await fc.assert(
      fc.asyncProperty(
        fc.array(taskSpec, { minLength: 3, maxLength: 8 }),
        fc.integer({ min: 1, max: 2 }),
        fc.commands(leaseCommands, { maxCommands: STEPS, size: 'max' }),
        async (specs, concurrency, commands) => {
          const ids = await seedTasks(specs, concurrency);
          const model = new LeaseModel(stats, concurrency);
          ids.forEach((id, i) => {
            const s = specs[i]!;
            model.tasks.set(id, {
              id, name: s.name, priority: s.priority, groupKey: s.groupKey, maxAttempts: s.maxAttempts, flow: s.limited ? LIMIT : null,
              status: 'pending', attempts: 0, leaseVersion: 0, owner: null, expired: false, due: true, scheduled: false, since: 0, lastError: null,
            });
          });
          const real: Real = { pool: t.pool, db: t.db, previous: new Map() };
          await fc.asyncModelRun(() => ({ model, real }), commands);
        },
      ),
      { numRuns: RUNS, seed },
    );
    summary('state-machine', {
      runs: RUNS, claims: stats.claimed, reclaims: stats.reclaimedAfterExpiry, reaped: stats.reaped,
      'finalize-won': stats.finalizeWon, 'expired-finalize-won': stats.expiredFinalizeWon,
      'stale-refused': stats.staleRefused + stats.heartbeatRefused, lost: 0,
      'limited-claims': stats.limitedClaimed, promoted: stats.promoted,
    });
    // every path the invariants talk about was really taken
    expect(stats.reclaimedAfterExpiry).toBeGreaterThan(0);
    expect(stats.reaped).toBeGreaterThan(0);
    expect(stats.staleRefused).toBeGreaterThan(0);
    expect(stats.expiredFinalizeWon).toBeGreaterThan(0);
    expect(stats.heartbeatWon).toBeGreaterThan(0);
    expect(stats.heartbeatRefused).toBeGreaterThan(0);
    expect(stats.limitedClaimed).toBeGreaterThan(0);
    // (promotions of a limit's scheduled rows take a scheduled row, its due time and a claim
    // serving the limit in that order: a few per hundred runs; limits.int.test.ts covers them)
  });
});
