// Issue 36, item 4: timeouts an operator sets low on the database (statement_timeout 200 ms,
// lock_timeout 100 ms, idle_in_transaction_session_timeout 1 s). Two workers (one direct with
// LISTEN, one through PgBouncer in transaction mode) drain a backlog of 20,000 tasks, ordered
// ones and retries among them: no error but the timeouts themselves (none on a quiet machine),
// each retried, and every task done.
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueueMany, RetryableError } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { databaseOf, usePgBouncer } from './pgbouncer.js';
import { usePools, waitUntil } from './pooled.js';

const BACKLOG = 20_000;
/** Of which ordered, in groups of 50: their writes take group locks, where lock_timeout bites. */
const ORDERED = 2_000;
const TIMEOUTS = { statement_timeout: '200ms', lock_timeout: '100ms', idle_in_transaction_session_timeout: '1s' } as const;
/** SQLSTATEs of the three timeouts: statement, lock, idle in transaction. */
const TIMEOUT_CODES = new Set(['57014', '55P03', '25P03']);

const t = useTestDatabase();
const bouncer = usePgBouncer();
const openPooled = usePools(() => bouncer.url(databaseOf(t.url)));
const openDirect = usePools(() => t.url);
const track = useWorkers();

beforeAll(async () => {
  // as an operator would: on the database, so every new session starts with them
  for (const [name, value] of Object.entries(TIMEOUTS)) await sql.raw(`ALTER DATABASE ${databaseOf(t.url)} SET ${name} = '${value}'`).execute(t.db);
});
afterAll(async () => {
  await sql.raw(`ALTER DATABASE ${databaseOf(t.url)} RESET ALL`).execute(t.db);
});

async function settingsOf(pool: pg.Pool): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ name: string; setting: string }>(
    `SELECT name, setting || coalesce(unit, '') AS setting FROM pg_settings WHERE name = ANY($1) ORDER BY name`,
    [Object.keys(TIMEOUTS)],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
}

describe('statement, lock and idle-in-transaction timeouts set low on the database', () => {
  it(`two workers drain a backlog of ${BACKLOG.toLocaleString('en')} tasks (ordered ones and retries among them): nothing lost, no error but a timeout`, async () => {
    const direct = openDirect({ max: 10 });
    const pooled = openPooled({ max: 10 });
    // the sessions leasehold uses carry the operator's timeouts, directly and through PgBouncer
    const expected = { idle_in_transaction_session_timeout: '1000ms', lock_timeout: '100ms', statement_timeout: '200ms' };
    expect(await settingsOf(direct)).toEqual(expected);
    expect(await settingsOf(pooled)).toEqual(expected);

    const runs = new Map<number, number>();
    const work = defineTask<{ n: number }>('timeouts-work', {
      handler: ({ n }) => {
        const count = (runs.get(n) ?? 0) + 1;
        runs.set(n, count);
        // one task in a hundred fails once: retries are writes too
        if (n % 100 === 0 && count === 1) throw new RetryableError(`first attempt of ${n}`, { retryAfterMs: 0 });
      },
    });
    const ordered = defineTask<{ n: number }>('timeouts-ordered', { ordered: true, handler: ({ n }) => void runs.set(n, (runs.get(n) ?? 0) + 1) });
    // the backlog, in the application's batches of 1,000 (each one statement, well under 200 ms)
    for (let from = 0; from < BACKLOG - ORDERED; from += 1_000) {
      await enqueueMany(direct, work, Array.from({ length: 1_000 }, (_, i) => ({ payload: { n: from + i } })));
    }
    for (let from = BACKLOG - ORDERED; from < BACKLOG; from += 1_000) {
      await enqueueMany(direct, ordered, Array.from({ length: 1_000 }, (_, i) => ({ payload: { n: from + i }, groupKey: `g${(from + i) % (ORDERED / 50)}` })));
    }
    const errors: Error[] = [];
    const workers = [
      track(createWorker({ pool: direct, tasks: [work, ordered], concurrency: 8, pollInterval: 100, logger: null })),
      track(createWorker({ pool: pooled, tasks: [work, ordered], concurrency: 8, noPreparedStatements: true, pollInterval: 100, logger: null })),
    ];
    for (const w of workers) {
      w.on('worker:error', ({ error }) => errors.push(error));
      w.on('heartbeat:failed', ({ error }) => errors.push(error));
    }
    await Promise.all(workers.map((w) => w.start()));
    await waitUntil(async () => {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM leasehold.task WHERE name LIKE 'timeouts-%' AND status = 'done'`.execute(t.db);
      return rows[0]!.n === BACKLOG;
    }, `${BACKLOG} tasks done`, 90_000);
    await Promise.all(workers.map((w) => w.stop({ timeout: '5s' })));
    // Whether a statement ever comes near 200 ms depends on the machine's load (a claim of 1,024
    // rows took 70-150 ms on a busy two-core test machine), so the test does not assert that
    // none did. What it asserts: the only errors are the operator's timeouts themselves, each
    // reported and recovered from, and no task is lost; as text, so that a failure shows them all.
    const unexpected = errors.filter((e) => !TIMEOUT_CODES.has((e as { code?: string }).code ?? ''));
    expect(unexpected.map((e) => `${(e as { code?: string }).code ?? ''} ${e.message}`).join('\n')).toBe('');
    expect(runs.size).toBe(BACKLOG);
    // at least once each, the failing first attempts twice (a write cut by a timeout may run one again)
    expect([...runs.values()].every((c) => c >= 1)).toBe(true);
    expect([...runs].filter(([n]) => n < BACKLOG - ORDERED && n % 100 === 0).every(([, c]) => c >= 2)).toBe(true);
  }, 120_000);
});
