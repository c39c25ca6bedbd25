// What a claim under a concurrency limit costs per lease the limit lists (issue 32, item 3): the
// same claim of 256 rows, from a table with no limit and from one whose only limit is a
// concurrency of 10,000 (never binding), while 0 to 1,536 earlier claims' rows are still leased.
// Each claim runs in a transaction that is rolled back, so every run sees the same rows and the
// same holder list; the claim statement is prepared and past its custom plans. A measurement, not
// a test: it prints numbers and asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/limit-holders.ts
// Works in two schemas of its own (limit_holders_<pid>_*) in that database, dropped at the end.
import pg from 'pg';
import { defineLimit, defineTask, enqueueMany, migrate, taskTable, type LeasedTable, type TaskRow } from '@leasehold/core';
import { leaseClaim, limitRegisterMany, type LeaseClaimInput } from '@leasehold/core/internal';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = 256;
const HELD = [0, 512, 1_024, 1_536];
const RUNS = 40;
const WARM = 10;

interface Side {
  readonly name: string;
  readonly schema: string;
  readonly table: LeasedTable<TaskRow>;
  readonly input: LeaseClaimInput;
}

async function build(admin: pg.Pool, limited: boolean): Promise<Side> {
  const schema = `limit_holders_${process.pid}_${limited ? 'limited' : 'unlimited'}`;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await migrate(admin, { schema });
  const limit = defineLimit('holders', { concurrency: 10_000 });
  const task = defineTask<{ i: number }>('call', { ...(limited ? { limit } : {}), handler: () => {} });
  const table = taskTable(schema);
  if (limited) await limitRegisterMany(admin, table, 'bench', [{ limit, taskNames: ['call'] }], ['call']);
  for (let done = 0; done < 40_000; done += 5_000) {
    await enqueueMany(admin, task, Array.from({ length: 5_000 }, (_, i) => ({ payload: { i: done + i } })), { schema });
  }
  await admin.query(`VACUUM ANALYZE ${schema}.task`);
  return { name: limited ? 'limited' : 'unlimited', schema, table, input: { owner: 'bench', batch: BATCH, leaseMs: 600_000, ...(limited ? { flows: ['holders'] } : {}) } };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const admin = new pg.Pool({ connectionString: url, max: 2 });
const client = new pg.Client({ connectionString: url });
await client.connect();
const sides = [await build(admin, false), await build(admin, true)];
try {
  console.log(`one claim of ${BATCH} rows, median (min) of ${RUNS - WARM} runs after ${WARM}, in ms`);
  console.log('| leases held | unlimited | limited | limited − unlimited |');
  console.log('|---:|---:|---:|---:|');
  let held = 0;
  for (const target of HELD) {
    // the leases stay: claimed and committed, never finished
    for (; held < target; held += BATCH) for (const s of sides) await leaseClaim(admin, s.table, s.input);
    const times = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    for (let run = 0; run < RUNS; run++) {
      // alternating, so that the machine's load falls on both alike
      for (const s of sides) {
        await client.query('BEGIN');
        const t0 = performance.now();
        await leaseClaim(client, s.table, s.input);
        const ms = performance.now() - t0;
        await client.query('ROLLBACK');
        if (run >= WARM) times.get(s.name)!.push(ms);
      }
    }
    const [u, l] = [times.get('unlimited')!, times.get('limited')!];
    const cell = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)})`;
    console.log(`| ${target.toLocaleString('en-US')} | ${cell(u)} | ${cell(l)} | ${(median(l) - median(u)).toFixed(2)} |`);
  }
} finally {
  await client.end();
  for (const s of sides) await admin.query(`DROP SCHEMA IF EXISTS ${s.schema} CASCADE`);
  await admin.end();
}
