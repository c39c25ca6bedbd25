// Cancelling a task costs what its tree holds, not how many rows the table keeps: finding the
// task's descendants used to join the table at every level of the tree (with statistics taken
// while the table was empty, a hash join that read every row of the table per level) and then
// joined the tree back to the table (with current statistics, a merge join that walked the
// primary key through nearly the whole history).
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { cancelTask, taskTable } from '@leasehold/core';
import { statementPlanReads, type RecordedStatement } from '../claim-plan.js';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const table = taskTable();
const HISTORY = 200_000;
// the history's workflows: every fourth finished row is a child of one of the first 1,000
const HISTORY_PARENTS = 1_000;
const CHILDREN = 40;
const GRANDCHILDREN = 3;
const TREE = 1 + CHILDREN + CHILDREN * GRANDCHILDREN;

/**
 * 200,000 finished rows (50,000 of them children of older workflows), then one running workflow:
 * 40 children (done, pending and waiting in turn), each with 3 pending children. Returns the
 * workflow's id.
 */
async function workflowBesideHistory(stats: 'empty' | 'current'): Promise<string> {
  await sql`TRUNCATE leasehold.task, leasehold.task_group RESTART IDENTITY`.execute(t.db);
  // this file's own database: no autovacuum ANALYZE may refresh the statistics mid-test
  await sql`ALTER TABLE leasehold.task SET (autovacuum_enabled = false)`.execute(t.db);
  // empty: as a table gets them when it was analysed before its first busy hour
  if (stats === 'empty') await sql`ANALYZE leasehold.task`.execute(t.db);
  await sql`
    INSERT INTO leasehold.task (name, status, attempts, lease_version, done_at, parent_id)
    SELECT 'history', 'done', 1, 1, now(), CASE WHEN g > ${HISTORY_PARENTS} AND g % 4 = 0 THEN 1 + g % ${HISTORY_PARENTS} END
    FROM generate_series(1, ${HISTORY}) AS g
  `.execute(t.db);
  const { rows: [root] } = await sql<{ id: string }>`
    INSERT INTO leasehold.task (name, status, attempts, lease_version, lease_owner, lease_until)
    VALUES ('workflow', 'processing', 1, 1, 'w', now() + interval '5 minutes') RETURNING id::text AS id
  `.execute(t.db);
  const { rows: children } = await sql<{ id: string }>`
    INSERT INTO leasehold.task (name, status, done_at, wait_for, parent_id)
    SELECT 'child', (ARRAY['done', 'pending', 'waiting'])[1 + g % 3],
           CASE WHEN g % 3 = 0 THEN now() END, CASE WHEN g % 3 = 2 THEN 'children' END, ${root!.id}::bigint
    FROM generate_series(0, ${CHILDREN - 1}) AS g
    RETURNING id::text AS id
  `.execute(t.db);
  await sql`
    INSERT INTO leasehold.task (name, parent_id)
    SELECT 'grandchild', c FROM unnest(${children.map((c) => c.id)}::bigint[]) AS c, generate_series(1, ${GRANDCHILDREN})
  `.execute(t.db);
  if (stats === 'current') await sql`ANALYZE leasehold.task`.execute(t.db);
  return root!.id;
}

/**
 * The first statement `cancelTask` sends (the one that finds the tree), from an executor that
 * passes for a pg client inside a transaction, so the cancel joins it and sends its statements
 * there; it answers with no rows, so the cancel then fails (no such task).
 */
async function treeStatement(id: string): Promise<RecordedStatement> {
  let statement: RecordedStatement | undefined;
  const recorder = {
    getTransactionStatus: () => 'T',
    query: async (arg: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
      statement ??= typeof arg === 'string' ? { text: arg, values: values ?? [] } : { text: arg.text, values: arg.values ?? [] };
      return { rows: [], rowCount: 0 };
    },
  };
  await cancelTask(recorder, id).catch(() => undefined);
  if (statement === undefined) throw new Error('nothing was sent');
  return statement;
}

describe('cancelling a workflow beside a long history', () => {
  // empty first: an ANALYZE of the emptied table would keep the statistics an earlier case took
  it.each(['empty', 'current'] as const)(
    `finding a ${TREE}-task tree among ${HISTORY.toLocaleString('en')} finished rows reads about the tree (%s statistics)`,
    async (stats) => {
      const root = await workflowBesideHistory(stats);
      const reads = await statementPlanReads(t.pool, table.table, await treeStatement(root));
      // each task of the tree once (161 here: the root by its id, the others by their parent's
      // probe), with room for a plan that reads a few more; as joins, the tree took the whole
      // table at every level, or walked the primary key through the history
      expect(reads.rowsTouched, reads.plan).toBeLessThanOrEqual(2 * TREE);
    },
  );

  it('cancels the task and every unfinished descendant, the task first, and leaves finished ones', async () => {
    const root = await workflowBesideHistory('current');
    const { rows: open } = await sql<{ id: string }>`
      SELECT id::text AS id FROM leasehold.task
      WHERE id > ${HISTORY} AND status IN ('pending', 'processing', 'waiting', 'dead') ORDER BY id
    `.execute(t.db);
    const { cancelled } = await cancelTask(t.pool, root);
    // the done children's own children are descendants too, and are cancelled
    expect(cancelled).toEqual(open.map((r) => r.id));
    expect(cancelled[0]).toBe(root);
    const { rows } = await sql<{ status: string; n: string }>`
      SELECT status, count(*) AS n FROM leasehold.task WHERE id > ${HISTORY} GROUP BY 1 ORDER BY 1
    `.execute(t.db);
    expect(rows.map((r) => [r.status, Number(r.n)])).toEqual([
      ['cancelled', TREE - Math.ceil(CHILDREN / 3)],
      ['done', Math.ceil(CHILDREN / 3)],
    ]);
    // a second cancel finds the tree ended: nothing more to cancel
    expect(await cancelTask(t.pool, root)).toEqual({ cancelled: [] });
  });
});
