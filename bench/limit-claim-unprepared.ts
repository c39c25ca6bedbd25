// What a claim under a limit kept in stripes costs when PostgreSQL parses and plans it on every
// call, as it does through PgBouncer in transaction mode (`noPreparedStatements`): the whole claim
// statement against the striped-only one a worker sends (`LeaseClaimInput.stripedOnly`, issue 32).
// A limit of 1,000 (kept in two stripes of 500), 20,000 ready rows under it; each claim of BATCH
// rows (default 64) runs in a transaction that is rolled back, so every call sees the same rows,
// and the two statements alternate call by call. Prints the server backend's CPU per claim (from
// /proc, so the server must run on this machine) and the wall-clock median. A measurement, not a
// test: it asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/limit-claim-unprepared.ts
// Works in a schema of its own (limit_unprepared_<pid>) in that database, dropped at the end.
import pg from 'pg';
import { defineLimit, defineTask, enqueueMany, migrate, noPreparedStatements, taskTable } from '@leasehold/core';
import { leaseClaim, limitRegisterMany, type LeaseClaimInput } from '@leasehold/core/internal';
import { measuredClient } from './lib/backend-cpu.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = Number(process.env.BATCH ?? 64);
const RUNS = 200;
const WARM = 10;
const ROUNDS = 3;

const admin = new pg.Pool({ connectionString: url, max: 2 });
const measured = await measuredClient(url);
const client = noPreparedStatements(measured.client);
const schema = `limit_unprepared_${process.pid}`;

try {
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(admin, { schema });
  const limit = defineLimit('api', { concurrency: 1_000 });
  const task = defineTask<{ i: number }>('call', { limit, handler: () => {} });
  const table = taskTable(schema);
  const flows = await limitRegisterMany(admin, table, 'bench', [{ limit, taskNames: ['call'] }], ['call']);
  for (let done = 0; done < 20_000; done += 5_000) {
    await enqueueMany(admin, task, Array.from({ length: 5_000 }, (_, i) => ({ payload: { i: done + i } })), { schema });
  }
  await admin.query(`VACUUM ANALYZE ${schema}.task`);
  const base: LeaseClaimInput = { owner: 'bench', batch: BATCH, leaseMs: 600_000, flows, names: ['call'] };
  const sides = { whole: base, stripedOnly: { ...base, stripedOnly: true } };
  console.log(`one claim of ${BATCH} rows under a limit of 1,000 kept in stripes, parsed and planned per call; ${RUNS} claims of each per round`);
  console.log('| round | whole: backend CPU / wall median | striped-only: backend CPU / wall median | rows taken |');
  console.log('|---:|---:|---:|---:|');
  for (let round = 1; round <= ROUNDS; round++) {
    const cpu = { whole: 0, stripedOnly: 0 };
    const walls: Record<keyof typeof sides, number[]> = { whole: [], stripedOnly: [] };
    const took = { whole: 0, stripedOnly: 0 };
    for (let run = 0; run < 2 * (RUNS + WARM); run++) {
      const side: keyof typeof sides = run % 2 === 0 ? 'whole' : 'stripedOnly';
      await client.query('BEGIN');
      const cpu0 = measured.cpuMs();
      const t0 = performance.now();
      took[side] = (await leaseClaim(client, table, sides[side])).claimed.length;
      const wall = performance.now() - t0;
      if (run >= 2 * WARM) {
        walls[side].push(wall);
        cpu[side] += measured.cpuMs() - cpu0;
      }
      await client.query('ROLLBACK');
    }
    const median = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
    const cell = (side: keyof typeof sides) => `${(cpu[side] / RUNS).toFixed(2)} / ${median(walls[side]).toFixed(2)} ms`;
    console.log(`| ${round} | ${cell('whole')} | ${cell('stripedOnly')} | ${took.whole} / ${took.stripedOnly} |`);
  }
} finally {
  await measured.client.end();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}
