// What finishing limited rows costs the server beyond unlimited ones (issue 32): the same UPDATE
// of 256 processing rows to done, rolled back, on a table whose task is under a concurrency limit
// (each row fires the slot-freed trigger, core migrations 7 and 19) and on one whose task is not;
// then the limited rows through the worker's fenced write (leaseFinalizeMany), without and with
// `limited` marked (the wake-up done once before the rows, core migration 22). Prints the
// backend's CPU per statement from /proc (the server must run on this machine). A measurement,
// not a test: it asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/slot-freed-update.ts
//   (SLOT_FREED_RUNS: statements measured per figure, default 100)
// Works in schemas of its own (slot_freed_<pid>_*) in that database, dropped at the end.
import pg from 'pg';
import { defineLimit, defineTask, enqueueMany, migrate, taskTable } from '@leasehold/core';
import { leaseClaim, leaseFinalizeMany, limitRegisterMany, toDone } from '@leasehold/core/internal';
import { measuredClient } from './lib/backend-cpu.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROWS = 256;
const RUNS = Number(process.env.SLOT_FREED_RUNS ?? 100);
const WARM = 10;

const admin = new pg.Pool({ connectionString: url, max: 2 });
const measured = await measuredClient(url);
const client = measured.client;
const backendCpuMs = () => measured.cpuMs();

type Write = 'update' | 'fenced' | 'fenced, marked';

async function measure(limited: boolean, write: Write = 'update'): Promise<number> {
  const schema = `slot_freed_${process.pid}_${limited ? 'limited' : 'unlimited'}`;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  try {
    await migrate(admin, { schema });
    const limit = defineLimit('slots', { concurrency: 10_000 });
    const task = defineTask<{ i: number }>('call', { ...(limited ? { limit } : {}), handler: () => {} });
    const table = taskTable(schema);
    if (limited) await limitRegisterMany(admin, table, 'bench', [{ limit, taskNames: ['call'] }], ['call']);
    await enqueueMany(admin, task, Array.from({ length: 2 * ROWS }, (_, i) => ({ payload: { i } })), { schema });
    const claimed = await leaseClaim(admin, table, { owner: 'bench', batch: ROWS, leaseMs: 600_000, ...(limited ? { flows: ['slots'] } : {}) });
    const ids = claimed.claimed.map((c) => c.id);
    const items = claimed.claimed.map((c) => ({ id: c.id, leaseVersion: c.leaseVersion, transition: toDone(), groupKey: null, parentId: null, limited: write === 'fenced, marked' }));
    await admin.query(`VACUUM ANALYZE ${schema}.task`);
    let cpu0 = 0;
    for (let run = 0; run < RUNS + WARM; run++) {
      if (run === WARM) cpu0 = backendCpuMs();
      await client.query('BEGIN');
      if (write === 'update') {
        await client.query({
          name: `slot_freed_${schema}`,
          text: `UPDATE ${schema}.task SET status = 'done', lease_owner = NULL, lease_until = NULL WHERE id = ANY($1::bigint[])`,
          values: [ids],
        });
      } else await leaseFinalizeMany(client, table, items);
      await client.query('ROLLBACK');
    }
    return (backendCpuMs() - cpu0) / RUNS;
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

try {
  console.log(`UPDATE of ${ROWS} processing rows to done, rolled back; backend CPU per statement (${RUNS} runs)`);
  console.log('| round | unlimited rows | limited rows | limited, fenced write | limited, fenced write marked `limited` |');
  console.log('|---:|---:|---:|---:|---:|');
  for (let round = 1; round <= 3; round++) {
    const u = await measure(false);
    const l = await measure(true);
    const f = await measure(true, 'fenced');
    const m = await measure(true, 'fenced, marked');
    console.log(`| ${round} | ${u.toFixed(2)} ms | ${l.toFixed(2)} ms | ${f.toFixed(2)} ms | ${m.toFixed(2)} ms |`);
  }
} finally {
  await client.end();
  await admin.end();
}
