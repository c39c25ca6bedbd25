// Screenshots of the dashboard's main views for the READMEs and docs/dashboard.md:
//
//   npx tsx --conditions=@leasehold/source scripts/dashboard-screenshots.ts
//
// Seeds a schema of its own (`dashboard_screenshots`: an hour of finished work, waiting, running
// and dead tasks, an order aggregate blocked by its dead head) on DATABASE_URL, or on a throwaway
// PostgreSQL when it is unset; serves the dashboard on it; and photographs each view with Debian's
// Chromium (LEASEHOLD_CHROMIUM to use another) through playwright-core, into docs/dashboard/.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createOutbox, migrate } from '@leasehold/outbox';
import { startEmbeddedPostgres, type ThrowawayPostgres } from '@leasehold/core/testing';
import { startDashboard } from '@leasehold/dashboard';
import pg from 'pg';
import { chromium } from 'playwright-core';

const SCHEMA = 'dashboard_screenshots';
const OUT = resolve(import.meta.dirname, '..', 'docs', 'dashboard');
const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';

/** What the views are pointed at once the data is in. */
interface Seeded {
  readonly reportTask: string;
  readonly aggregate: string;
}

// task rows as (name, payload, status, attempts, max_attempts, lease_owner, lease_until, lease_version,
// last_error, checkpoint, scheduled, created_at, available_at, done_at), inserted in creation
// order so that ids grow with created_at, as they do in a real table
const TASK_ROWS = `
  -- an hour of finished work, in waves, so the chart and the sparklines have a shape
  SELECT (ARRAY['mail.send-welcome', 'image.resize', 'invoice.generate', 'search.reindex'])[1 + i % 4], jsonb_build_object('n', i),
         'done', 1, 12, NULL, NULL::timestamptz, 1::bigint, NULL, NULL::jsonb, false, done - interval '2 seconds', done - interval '2 seconds', done
  FROM (SELECT i, now() - make_interval(secs => 3600 * (i::float8 / 4000) ^ 1.15) AS done
        FROM generate_series(1, 4000) AS i WHERE (i * 7919) % 100 < 55 + 40 * sin(i / 300.0)) AS g
  UNION ALL
  -- waiting: due now, and retrying after a failure (its next attempt in a minute)
  SELECT (ARRAY['mail.send-welcome', 'image.resize', 'invoice.generate'])[1 + i % 3], jsonb_build_object('n', i), 'pending',
         CASE WHEN i % 9 = 0 THEN 2 ELSE 0 END, 12, NULL, NULL, CASE WHEN i % 9 = 0 THEN 2 ELSE 0 END,
         CASE WHEN i % 9 = 0 THEN 'Error: connect ETIMEDOUT 10.0.4.17:587' END, NULL, i % 9 = 0,
         now() - make_interval(secs => i * 4), now() - make_interval(secs => i * 4) + CASE WHEN i % 9 = 0 THEN interval '10 minutes' ELSE interval '0' END, NULL
  FROM generate_series(1, 140) AS i
  UNION ALL
  -- running under the leases of two workers; one lease ran out (its worker was killed)
  SELECT 'image.resize', jsonb_build_object('image', 'img_' || i || '.jpg'), 'processing', 1, 12,
         CASE WHEN i % 2 = 0 THEN 'worker-a@web-1' ELSE 'worker-b@web-2' END,
         now() + CASE WHEN i = 1 THEN interval '-25 seconds' ELSE make_interval(secs => 10 + i) END, 1, NULL, NULL, false,
         now() - make_interval(secs => 20 + i), now() - make_interval(secs => 20 + i), NULL
  FROM generate_series(1, 6) AS i
  UNION ALL
  -- the task page's subject: a monthly report on its second attempt, with a checkpoint
  SELECT 'report.build-monthly', '{"tenant": "acme", "month": "2026-11", "format": "pdf"}', 'processing', 2, 5, 'worker-a@web-1',
         now() + interval '41 seconds', 2, 'TimeoutError: statement timeout after 30 s (query "monthly_totals")',
         '{"section": "invoices", "rowsDone": 48000, "rowsTotal": 120000}', false, now() - interval '3 minutes', now() - interval '3 minutes', NULL
  UNION ALL
  -- dead: what a person has to decide about
  SELECT name, payload::jsonb, 'dead', attempts, 12, NULL, NULL, attempts, error, NULL, false, created, created, NULL
  FROM (VALUES
    ('mail.send-welcome', '{"userId": 81, "email": "ana@example.com"}', 12,
     'SMTPError: 550 5.1.1 <ana@example.com>: Recipient address rejected: User unknown', now() - interval '50 minutes'),
    ('invoice.generate', '{"orderId": "A-1007"}', 1, 'PermanentError: order A-1007 has no billing address', now() - interval '34 minutes'),
    ('mail.send-welcome', '{"userId": 97, "email": "li@example.com"}', 12,
     'SMTPError: 554 5.7.1 Message rejected: sending quota exceeded', now() - interval '12 minutes')
  ) AS d (name, payload, attempts, error, created)`;

async function seedTasks(pool: pg.Pool): Promise<string> {
  await pool.query(`INSERT INTO ${SCHEMA}.task (name, payload, status, attempts, max_attempts, lease_owner, lease_until, lease_version,
      last_error, checkpoint, scheduled, created_at, available_at, done_at)
    SELECT * FROM (${TASK_ROWS}) AS r ORDER BY 12`);
  const report = await pool.query<{ id: string }>(`SELECT id::text FROM ${SCHEMA}.task WHERE name = 'report.build-monthly'`);
  const id = report.rows[0]!.id;
  // the producer's trace context, where this schema keeps one for tasks
  const traced = await pool.query(`SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'task' AND column_name = 'traceparent'`, [SCHEMA]);
  if (traced.rowCount) {
    await pool.query(`UPDATE ${SCHEMA}.task SET traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' WHERE id = $1`, [id]);
  }
  return id;
}

async function seedOutbox(pool: pg.Pool): Promise<string> {
  const outbox = createOutbox({ schema: SCHEMA, orderedEventTypes: ['OrderPlaced', 'OrderPaid', 'OrderShipped'] });
  // delivered: each order's three events, evenly over the span; `first` numbers the orders
  const delivered = (first: number, count: number, fromMin: number, toMin: number) =>
    pool.query(`INSERT INTO ${SCHEMA}.outbox (aggregate_type, aggregate_id, event_type, payload, group_key, status, attempts, lease_version, created_at, done_at)
      SELECT 'order', o, e, jsonb_build_object('order', o), 'order:' || o, 'done', 1, 1, at, at + interval '300 milliseconds'
      FROM (SELECT 'A-' || ($1::int + i / 3) AS o, (ARRAY['OrderPlaced', 'OrderPaid', 'OrderShipped'])[1 + i % 3] AS e,
                   now() - make_interval(secs => 60 * ($3::float8 - ($3::float8 - $4::float8) * (i::float8 / $2))) AS at
            FROM generate_series(0, $2::int - 1) AS i) AS g
      ORDER BY at`, [first, count, fromMin, toMin]);
  await delivered(1000, 780, 60, 19.5);
  // order A-1042, 19 minutes ago: its OrderPlaced was refused for good, so OrderPaid and
  // OrderShipped wait behind it
  const aggregate = 'A-1042';
  const ids: string[] = [];
  for (const eventType of ['OrderPlaced', 'OrderPaid', 'OrderShipped']) {
    ids.push(await outbox.add(pool, { aggregateType: 'order', aggregateId: aggregate, eventType, payload: { order: aggregate, totalCents: 12900 } }));
  }
  await pool.query(`UPDATE ${SCHEMA}.outbox SET created_at = now() - interval '19 minutes', available_at = now() - interval '19 minutes'
    WHERE id = ANY($1::bigint[])`, [ids]);
  await pool.query(`UPDATE ${SCHEMA}.outbox SET status = 'dead', attempts = 12, lease_version = 12,
      last_error = 'HTTP 410 Gone from https://billing.example.com/hooks: order A-1042 was deleted in billing' WHERE id = $1`, [ids[0]]);
  await delivered(1300, 420, 19, 0);
  // and the next orders' first events, just written
  for (let i = 0; i < 4; i++) {
    await outbox.add(pool, { aggregateType: 'order', aggregateId: `A-${1600 + i}`, eventType: 'OrderPlaced', payload: { order: `A-${1600 + i}` } });
  }
  return `order:${aggregate}`;
}

async function seed(pool: pg.Pool): Promise<Seeded> {
  await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(pool, { schema: SCHEMA });
  const reportTask = await seedTasks(pool);
  const aggregate = await seedOutbox(pool);
  await pool.query(`INSERT INTO ${SCHEMA}.schedule (name, task_name, cron, timezone, last_tick, alive_until)
    VALUES ('nightly-report', 'report.build-monthly', '0 3 * * *', 'Europe/Berlin', date_trunc('day', now()) + interval '2 hours', now() + interval '1 minute')`);
  await pool.query(`ANALYZE ${SCHEMA}.task, ${SCHEMA}.outbox`);
  return { reportTask, aggregate };
}

/** The views to photograph: file name, path, viewport width, and whether the whole page. */
function views(s: Seeded): ReadonlyArray<readonly [string, string, number, boolean]> {
  return [
    ['overview.png', '', 1280, true],
    ['tasks.png', 'tasks?name=mail.send-welcome', 1280, false],
    ['task.png', `tasks/${s.reportTask}`, 1280, true],
    ['dead-letters.png', 'dead', 1280, true],
    ['blocked-aggregate.png', `outbox/group?${new URLSearchParams({ key: s.aggregate })}`, 1280, true],
    ['overview-narrow.png', '', 390, false],
  ];
}

async function main(): Promise<void> {
  let server: ThrowawayPostgres | undefined;
  const url = process.env.DATABASE_URL ?? (server = await startEmbeddedPostgres()).connectionString;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const dashboard = await startDashboard({ database: pool, schema: SCHEMA, port: 0 }).catch(async (e: unknown) => {
    await pool.end();
    throw e;
  });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--hide-scrollbars'] });
  try {
    const seeded = await seed(pool);
    mkdirSync(OUT, { recursive: true });
    for (const [file, path, width, fullPage] of views(seeded)) {
      const page = await browser.newPage({ viewport: { width, height: width < 600 ? 844 : 800 }, colorScheme: 'light', deviceScaleFactor: 1 });
      await page.goto(new URL(path, dashboard.url).toString(), { waitUntil: 'networkidle' });
      await page.screenshot({ path: join(OUT, file), fullPage, animations: 'disabled' });
      console.log(`docs/dashboard/${file}  ← /${path}`);
      await page.close();
    }
  } finally {
    await browser.close();
    await dashboard.close();
    await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => undefined);
    await pool.end();
    await server?.stop();
  }
}

await main();
