// The dashboard-paging workload's table: n task rows in the shape of a long-lived queue, written
// fast enough for 10,000,000 rows (issue 33): the secondary indexes are dropped first and built
// once afterwards (building an index from a whole table is a sort; keeping ~15 of them up to date
// row by row made the insert several times slower), then one VACUUM sets the visibility map.
import { migrate } from '@leasehold/core';
import type pg from 'pg';

// per 1,000 consecutive rows: 928 done, 50 pending (5 of them scheduled an hour ahead), 15 dead,
// 5 processing (1 with an expired lease), 2 waiting workflow runs; names skewed (mail.send 40 %,
// … invoice.void 1 in 2,000); a group key on every fifth row (20,000 groups); created evenly
// over 30 days. Every status is spread over the whole table: the worst case for reading one
// status through its index (no status sits together in a few pages).
export const NAMES = `CASE WHEN i % 2000 = 7 THEN 'invoice.void' WHEN i % 10 < 4 THEN 'mail.send' WHEN i % 10 < 6 THEN 'report.build'
  WHEN i % 10 < 8 THEN 'webhook.deliver' ELSE 'image.resize' END`;
export const STATUS = `CASE WHEN i % 1000 < 928 THEN 'done' WHEN i % 1000 < 930 THEN 'waiting' WHEN i % 1000 < 980 THEN 'pending'
  WHEN i % 1000 < 995 THEN 'dead' ELSE 'processing' END`;
/** Statement size: a progress line per batch, and no single transaction holding 10,000,000 rows' WAL. */
const BATCH = 1_000_000;

/** Drops and migrates `schema`, then writes `n` rows into its task table, indexed, analysed and vacuumed. */
export async function fillTasks(admin: pg.Pool, schema: string, n: number, log: (message: string) => void): Promise<void> {
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(admin, { schema });
  const t0 = Date.now();
  const { rows: indexes } = await admin.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = $1 AND tablename = 'task' AND indexname <> 'task_pkey'`,
    [schema],
  );
  for (const index of indexes) await admin.query(`DROP INDEX ${schema}.${index.name}`);
  for (let from = 1; from <= n; from += BATCH) {
    const to = Math.min(n, from + BATCH - 1);
    await admin.query(
      `INSERT INTO ${schema}.task (name, payload, status, group_key, attempts, max_attempts, lease_owner, lease_until,
                                   lease_version, last_error, created_at, available_at, scheduled, done_at, wait_for)
       SELECT name, jsonb_build_object('orderId', i, 'note', 'bench row'), status,
              CASE WHEN i % 5 = 0 AND status IN ('pending', 'dead', 'done') THEN 'order-' || (i / 5) % 20000 END,
              CASE WHEN status = 'dead' THEN 12 WHEN later THEN 0 ELSE 1 END, 12,
              CASE WHEN status = 'processing' THEN 'worker-' || i % 8 END,
              CASE WHEN status <> 'processing' THEN NULL
                   WHEN i % 1000 = 999 THEN now() - interval '1 minute' ELSE now() + interval '1 day' END,
              1, CASE WHEN status = 'dead' THEN 'Error: upstream answered 503 for order ' || i END,
              created, CASE WHEN later THEN now() + interval '1 hour' ELSE created END, later,
              CASE WHEN status = 'done' THEN created + interval '2 seconds' END,
              CASE WHEN status = 'waiting' THEN 'children' END
       FROM (SELECT i, ${NAMES} AS name, ${STATUS} AS status, i % 1000 BETWEEN 975 AND 979 AS later,
                    now() - interval '30 days' * (1 - i::float8 / $1) AS created
             FROM generate_series($2::int, $3::int) AS i) AS g
       ORDER BY i`,
      [n, from, to],
    );
    log(`dashboard-paging: ${to.toLocaleString('en-US')} rows written, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  for (const index of indexes) await admin.query(index.def);
  log(`dashboard-paging: ${indexes.length} indexes built, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  // ordering groups as the claim keeps them: the lowest unfinished row is the head, the rest blocked
  await admin.query(`INSERT INTO ${schema}.task_group (group_key, head_id)
    SELECT group_key, min(id) FROM ${schema}.task WHERE group_key IS NOT NULL AND status IN ('pending', 'processing', 'dead') GROUP BY group_key`);
  await admin.query(`UPDATE ${schema}.task AS t SET blocked = true FROM ${schema}.task_group AS g
    WHERE t.group_key = g.group_key AND t.id > g.head_id AND t.status = 'pending'`);
  await admin.query(`VACUUM ANALYZE ${schema}.task`);
  await admin.query('CHECKPOINT');
  log(`dashboard-paging: ${n.toLocaleString('en-US')} rows in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
