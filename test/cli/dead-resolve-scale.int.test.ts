// `leasehold dead retry --all` at the sizes an outage leaves behind. It used to read every dead id
// first and spread them into one push(), which overflowed the call stack from about 150,000 ids
// on, so the command failed (nothing retried) exactly when the most rows had died. And its chunks
// of 10,000 ids run on one connection: from the sixth on, PostgreSQL used the prepared retry's
// generic plan, which on a 1,150,000-row outbox joined the ids by nested loop (100,000,000
// comparisons a chunk): 250,000 dead rows took six minutes instead of ten seconds.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox } from '@leasehold/outbox';
import { parseCommandLine } from '../../packages/cli/src/args.js';
import type { CommandContext } from '../../packages/cli/src/commands/context.js';
import { deadResolveCommand } from '../../packages/cli/src/commands/dead-resolve.js';
import { leasedTables } from '../../packages/cli/src/leased-tables.js';
import { deadIds } from '../../packages/cli/src/sql/dead-ids.js';
import { schemaTables } from '../../packages/cli/src/sql/schema-tables.js';
import { recordStatement, statementPlanReads } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const outbox = createOutbox();
// the command's page and chunk size
const PAGE = 10_000;

// one connection, as the CLI's transaction has: prepared statements and their plans are per session
let session: pg.Pool;
beforeAll(() => void (session = new pg.Pool({ connectionString: t.url, max: 1 })));
afterAll(async () => session.end());

/**
 * `dead` dead messages and `done` delivered ones (at most half as many), the delivered ones
 * interleaved as every third row. Stale statistics: taken while the table held a few pending
 * messages only.
 */
async function deadMessages(dead: number, done: number, stats: 'current' | 'stale'): Promise<void> {
  await sql`TRUNCATE leasehold.outbox, leasehold.outbox_group`.execute(t.db);
  // no analysis by autovacuum behind the test's back
  await sql`ALTER TABLE leasehold.outbox SET (autovacuum_enabled = false)`.execute(t.db);
  if (stats === 'stale') {
    await sql`
      INSERT INTO leasehold.outbox (aggregate_type, aggregate_id, event_type, payload)
      SELECT 'order', g::text, 'OrderPaid', '{}' FROM generate_series(1, 100) AS g`.execute(t.db);
    await sql`ANALYZE leasehold.outbox`.execute(t.db);
    await sql`TRUNCATE leasehold.outbox`.execute(t.db);
  }
  await sql`
    INSERT INTO leasehold.outbox (aggregate_type, aggregate_id, event_type, payload, status, attempts, last_error, done_at)
    SELECT 'order', (g % 1000)::text, 'OrderPaid', '{}', s.status, 12, 'HTTP 503', CASE WHEN s.status = 'done' THEN now() END
    FROM generate_series(1, ${dead + done}::int) AS g,
         LATERAL (SELECT CASE WHEN g % 3 = 0 AND g <= 3 * ${done}::int THEN 'done' ELSE 'dead' END AS status) AS s
    ORDER BY g`.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.outbox`.execute(t.db);
}

/** Runs `leasehold <args>` in this process on `session`; returns its exit code and stdout. */
async function leasehold(args: readonly string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const invocation = parseCommandLine(args);
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CommandContext = {
    invocation,
    pool: session,
    database: 'test',
    io: { out: (text) => void out.push(text), err: (text) => void err.push(text), isTTY: false, columns: 120 },
    signal: new AbortController().signal,
    tables: async () => leasedTables(invocation.schema, await schemaTables(session, invocation.schema), 'test'),
  };
  const handler = deadResolveCommand('retry');
  return { code: await handler(ctx), out, err };
}

async function statusCounts(): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM leasehold.outbox GROUP BY 1`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

/** How the session planned core's retry statement so far: generic plans and custom ones. */
async function retryPlans(): Promise<{ generic: number; custom: number }> {
  const { rows } = await session.query<{ generic: string; custom: string }>(
    `SELECT coalesce(sum(generic_plans), 0) AS generic, coalesce(sum(custom_plans), 0) AS custom
     FROM pg_prepared_statements WHERE statement LIKE '%WITH wanted AS%'`,
  );
  return { generic: Number(rows[0]!.generic), custom: Number(rows[0]!.custom) };
}

describe('dead retry --all at production sizes', () => {
  it('retries every one of 200,000 dead messages', async () => {
    await deadMessages(200_000, 0, 'current');
    const result = await leasehold(['dead', 'retry', '--all', '--table', 'outbox', '--json']);
    expect(result.err).toEqual([]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.out[0]!) as { changed: string[]; rejected: unknown[] };
    expect(report.changed).toHaveLength(200_000);
    expect(report.rejected).toEqual([]);
    expect(await statusCounts()).toEqual({ pending: 200_000 });
  });

  it('plans each chunk of 60,000 dead messages for its own ids', async () => {
    await deadMessages(60_000, 0, 'current');
    const before = await retryPlans();
    const result = await leasehold(['dead', 'retry', '--all', '--table', 'outbox', '--json']);
    expect(result.code).toBe(0);
    expect(await statusCounts()).toEqual({ pending: 60_000 });
    const plans = await retryPlans();
    // six chunks, each planned for its 10,000 ids (core sends the statement unprepared); under
    // the generic plan (from the sixth execution on the connection) a chunk compared every id
    // with every other
    expect(plans.generic - before.generic).toBe(0);
  });

  it.each(['current', 'stale'] as const)('a page of dead ids reads that page, however many rows are dead (%s statistics)', async (stats) => {
    await deadMessages(200_000, 100_000, stats);
    const table = outbox.table;
    const { rows } = await sql<{ id: string }>`SELECT id FROM leasehold.outbox WHERE status = 'dead' ORDER BY id OFFSET 100000 LIMIT 1`.execute(t.db);
    for (const afterId of [null, String(rows[0]!.id)]) {
      const statement = await recordStatement((executor) => deadIds(executor, table, { afterId, limit: PAGE }));
      const reads = await statementPlanReads(t.pool, table.table, statement);
      // one page through the dead rows' index; reading every dead id touched 200,000
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * PAGE);
    }
  });
});
