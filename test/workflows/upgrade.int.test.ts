// `migrate` (core migrations 8 and later) upgrades a database of the previous release with tasks in flight:
// pending, grouped, running under a lease, dead. Afterwards the running task's token still
// finalizes, the rest run, and workflows work in the same schema.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createWorker, defineTask, enqueue, markDone, migrate, waitForResult, type TaskContext } from '@leasehold/core';
import { applyMigrationLine } from '@leasehold/core/internal';
import { MIGRATIONS } from '../../packages/core/src/migrate/generated-migrations.js';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const schema = 'upgraded';

describe('upgrading to workflows with tasks in flight', () => {
  it('keeps every task: the running one finalizes at its token, the others run, workflows run', async () => {
    const previous = MIGRATIONS.filter((m) => m.version < 8);
    await applyMigrationLine(t.pool, { line: 'core', migrations: previous }, { schema });
    const s = sql.id(schema, 'task');
    // rows as the previous release wrote them
    await sql`INSERT INTO ${s} (name, payload) VALUES ('plain', '{"n": 1}'), ('plain', '{"n": 2}')`.execute(t.db);
    await sql`INSERT INTO ${s} (name, payload, status, attempts, last_error) VALUES ('plain', '{"n": 3}', 'dead', 12, 'gave up')`.execute(t.db);
    const { rows: running } = await sql<{ id: string; lease_version: string }>`
      INSERT INTO ${s} (name, payload, status, attempts, lease_version, lease_owner, lease_until)
      VALUES ('plain', '{"n": 4}', 'processing', 1, 1, 'old-worker', now() + interval '10 minutes')
      RETURNING id, lease_version`.execute(t.db);

    const result = await migrate(t.pool, { schema });
    expect(result.applied).toEqual(MIGRATIONS.filter((m) => m.version >= 8).map((m) => `core:${m.version}`));

    // the old worker's fenced finalize still lands at its token
    expect(await markDone(t.pool, { id: running[0]!.id, leaseVersion: Number(running[0]!.lease_version) }, { schema })).toBe(true);

    const plain = defineTask('plain', { handler: (p: { n: number }) => p.n * 10 });
    const flow = defineTask('flow', {
      handler: async (_p: object, ctx: TaskContext) => {
        const a = await ctx.step('a', () => 1);
        await ctx.sleep('short', '50ms');
        return a + 1;
      },
    });
    const handle = await enqueue(t.pool, flow, {}, { schema });
    const worker = track(createWorker({ pool: t.pool, tasks: [plain, flow], schema, pollInterval: 20 }));
    await worker.start();
    expect(await waitForResult(t.pool, handle, { timeout: '20s', schema })).toBe(2);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const { rows } = await sql<{ status: string; n: number; result: number | null }>`
        SELECT status, (payload->>'n')::int AS n, result FROM ${s} WHERE name = 'plain' ORDER BY id`.execute(t.db);
      if (rows.filter((r) => r.status === 'done').length === 3 || Date.now() > deadline) {
        expect(rows.map((r) => [r.n, r.status, r.result])).toEqual([
          [1, 'done', 10],
          [2, 'done', 20],
          [3, 'dead', null],
          [4, 'done', null],
        ]);
        break;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    await worker.stop();
  });
});
