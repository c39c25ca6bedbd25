// Screenshots of a workflow run's page for docs/dashboard.md and the README:
//
//   npx tsx --conditions=@leasehold/source scripts/dashboard-run-screenshots.ts
//
// Runs a real workflow (steps, a database step, progress events, a signal wait, a sleep, children
// with children of their own, and a last wait it is still in) with a real worker in a schema of
// its own (`dashboard_run_screenshots`) on DATABASE_URL, or on a throwaway PostgreSQL when it is
// unset; serves the dashboard on it; and photographs the run's page with Debian's Chromium
// (LEASEHOLD_CHROMIUM to use another) through playwright-core: docs/dashboard/run.png (desktop,
// the whole page) and run-narrow.png (390 px, from the timeline down).
import { mkdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join, resolve } from 'node:path';
import { createWorker, defineEvent, defineSignal, defineTask, enqueue, getTask, migrate, sendSignal, type TaskContext } from '@leasehold/core';
import { startEmbeddedPostgres, type ThrowawayPostgres } from '@leasehold/core/testing';
import { startDashboard } from '@leasehold/dashboard';
import pg from 'pg';
import { chromium } from 'playwright-core';

const SCHEMA = 'dashboard_run_screenshots';
const OUT = resolve(import.meta.dirname, '..', 'docs', 'dashboard');
const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';

const approved = defineSignal<{ by: string }>('approved');
const delivered = defineSignal<{ at: string }>('delivered');
const stage = defineEvent<{ stage: string }>('stage');
// work that takes a moment, so the picture's bars have lengths
const work = <T>(ms: number, value: T) => sleep(ms).then(() => value);

const mail = defineTask('mail.send', { handler: (p: { to: string }) => work(200, p.to) });
const parcel = defineTask('order.ship-parcel', {
  handler: async (p: { parcel: number }, ctx: TaskContext) => {
    await ctx.step('print-label', () => work(300 + 200 * p.parcel, `label-${p.parcel}`));
    await ctx.waitForChildren(await ctx.spawn('notify', mail, [{ payload: { to: 'ana@example.com' } }]));
    return p.parcel;
  },
});
const fulfil = defineTask('order.fulfil', {
  handler: async (p: { order: string }, ctx: TaskContext) => {
    await ctx.step('reserve-stock', () => work(300, { reserved: 3 }));
    await ctx.dbStep('record-order', async (client) => (await client.query('SELECT $1::text AS order', [p.order])).rows[0]);
    await ctx.setEvent(stage, { stage: 'reserved' });
    const ok = await ctx.waitForSignal(approved, { timeout: '1 day' });
    await ctx.step('charge-card', () => work(600, { charged: 12900, by: ok.timedOut ? null : ok.payload.by }));
    await ctx.setEvent(stage, { stage: 'charged' });
    await ctx.sleep('cool-off', '1500ms');
    await ctx.waitForChildren(await ctx.spawn('ship', parcel, [{ payload: { parcel: 1 } }, { payload: { parcel: 2 } }]));
    await ctx.setEvent(stage, { stage: 'shipped' });
    await ctx.waitForSignal(delivered, { timeout: '2 days' });
    return 'delivered';
  },
});

async function runWorkflow(pool: pg.Pool): Promise<string> {
  await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(pool, { schema: SCHEMA });
  const worker = createWorker({ pool, schema: SCHEMA, tasks: [fulfil, parcel, mail], concurrency: 4, pollInterval: 50, logger: null });
  await worker.start();
  try {
    const run = await enqueue(pool, fulfil, { order: 'A-1042' }, { schema: SCHEMA });
    // until the run is parked in the wait of this name
    const until = async (wait: string) => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(50)) {
        const info = await getTask(pool, run, { schema: SCHEMA });
        if (info?.status === 'waiting' && info.steps.some((s) => !s.done && s.name === wait)) return;
      }
      throw new Error('the workflow did not get there within a minute');
    };
    await until('signal:approved');
    await sleep(700); // a person takes a moment to approve
    await sendSignal(pool, run, approved, { by: 'ops@example.com' }, { schema: SCHEMA });
    await until('signal:delivered');
    // sent, but nothing waits for it (yet): shown as pending
    await sendSignal(pool, run, defineSignal<{ street: string }>('address-changed'), { street: 'Hauptstr. 5' }, { schema: SCHEMA });
    return run.id;
  } finally {
    await worker.stop();
  }
}

async function main(): Promise<void> {
  let server: ThrowawayPostgres | undefined;
  const url = process.env.DATABASE_URL ?? (server = await startEmbeddedPostgres()).connectionString;
  const pool = new pg.Pool({ connectionString: url, max: 6 });
  const dashboard = await startDashboard({ database: pool, schema: SCHEMA, port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--hide-scrollbars'] });
  try {
    const id = await runWorkflow(pool);
    mkdirSync(OUT, { recursive: true });
    for (const [file, width] of [['run.png', 1280], ['run-narrow.png', 390]] as const) {
      const page = await browser.newPage({ viewport: { width, height: width < 600 ? 844 : 800 }, colorScheme: 'light', deviceScaleFactor: 1 });
      await page.goto(new URL(`tasks/${id}`, dashboard.url).toString(), { waitUntil: 'networkidle' });
      if (width < 600) await page.evaluate(`document.getElementById('s-timeline').scrollIntoView()`);
      await page.screenshot({ path: join(OUT, file), fullPage: width >= 600, animations: 'disabled' });
      console.log(`docs/dashboard/${file}  ← /tasks/${id}`);
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
