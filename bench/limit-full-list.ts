// What a claim under a concurrency limit costs once the limit binds (issue 32, item 3): the
// limit's list is full (`concurrency` leases listed, CONCURRENCY, default 1,024), its oldest FREED
// (default BATCH, default 256) leases are over, and one claim of BATCH rows takes their slots.
// Against the same claim from a table whose task has no limit. Each claim runs in a transaction
// that is rolled back, so every run sees the same rows and the same list; the statement is
// prepared and past its custom plans.
// Prints the server backend's CPU per claim (from /proc: less stretched by a loaded machine than
// wall time, so the server must run on this machine) and the wall-clock median. A measurement,
// not a test: it asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/limit-full-list.ts
// Works in schemas of its own (limit_full_<pid>_*) in that database, dropped at the end.
import pg from 'pg';
import { defineLimit, defineTask, enqueueMany, migrate, taskTable } from '@leasehold/core';
import { leaseClaim, limitRegisterMany, type LeaseClaimInput } from '@leasehold/core/internal';
import { measuredClient } from './lib/backend-cpu.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 1_024);
const BATCH = Number(process.env.BATCH ?? 256);
// how many of the oldest leases are over (FREED=0: the list full and every lease running, the claim
// a worker sends while another holds the whole limit)
const FREED = Number(process.env.FREED ?? BATCH);
const RUNS = 200;
const WARM = 10;
const ROUNDS = 3;

const admin = new pg.Pool({ connectionString: url, max: 2 });
const measured = await measuredClient(url);
const client = measured.client;
const backendCpuMs = () => measured.cpuMs();

async function build(limited: boolean): Promise<{ schema: string; input: LeaseClaimInput; table: ReturnType<typeof taskTable> }> {
  const schema = `limit_full_${process.pid}_${limited ? 'limited' : 'unlimited'}`;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(admin, { schema });
  const limit = defineLimit('full', { concurrency: CONCURRENCY });
  const task = defineTask<{ i: number }>('call', { ...(limited ? { limit } : {}), handler: () => {} });
  const table = taskTable(schema);
  if (limited) await limitRegisterMany(admin, table, 'bench', [{ limit, taskNames: ['call'] }], ['call']);
  for (let done = 0; done < 20_000; done += 5_000) {
    await enqueueMany(admin, task, Array.from({ length: 5_000 }, (_, i) => ({ payload: { i: done + i } })), { schema });
  }
  const input: LeaseClaimInput = { owner: 'bench', batch: BATCH, leaseMs: 600_000, ...(limited ? { flows: ['full'] } : {}) };
  // the list fills, committed; then its oldest leases end
  for (let held = 0; held < CONCURRENCY; held += BATCH) await leaseClaim(admin, table, input);
  await admin.query(
    `UPDATE ${schema}.task SET status = 'done', lease_owner = NULL, lease_until = NULL
     WHERE id IN (SELECT id FROM ${schema}.task WHERE status = 'processing' ORDER BY id LIMIT ${FREED})`,
  );
  await admin.query(`VACUUM ANALYZE ${schema}.task`);
  return { schema, input, table };
}

async function measure(side: Awaited<ReturnType<typeof build>>): Promise<{ cpu: number; wall: number; took: number }> {
  const walls: number[] = [];
  let took = 0;
  let cpu0 = 0;
  for (let run = 0; run < RUNS + WARM; run++) {
    if (run === WARM) cpu0 = backendCpuMs();
    await client.query('BEGIN');
    const t0 = performance.now();
    took = (await leaseClaim(client, side.table, side.input)).claimed.length;
    if (run >= WARM) walls.push(performance.now() - t0);
    await client.query('ROLLBACK');
  }
  walls.sort((a, b) => a - b);
  return { cpu: (backendCpuMs() - cpu0) / RUNS, wall: walls[Math.floor(walls.length / 2)]!, took };
}

const sides = { unlimited: await build(false), limited: await build(true) };
try {
  console.log(`one claim of ${BATCH} rows; the limit's list full (${CONCURRENCY} leases), its oldest ${FREED} over; ${RUNS} claims per round`);
  console.log('| round | unlimited: backend CPU / wall median | limited: backend CPU / wall median | rows taken |');
  console.log('|---:|---:|---:|---:|');
  for (let round = 1; round <= ROUNDS; round++) {
    const u = await measure(sides.unlimited);
    const l = await measure(sides.limited);
    console.log(`| ${round} | ${u.cpu.toFixed(2)} / ${u.wall.toFixed(2)} ms | ${l.cpu.toFixed(2)} / ${l.wall.toFixed(2)} ms | ${u.took} / ${l.took} |`);
  }
} finally {
  await client.end();
  for (const side of Object.values(sides)) await admin.query(`DROP SCHEMA IF EXISTS ${side.schema} CASCADE`);
  await admin.end();
}
