// What a workflow's park costs (issue 32, item 2): the statements and round trips the worker's
// pool sends per run that sleeps, waits for a signal (with a timeout) or waits for its children,
// and how long a parent that spawned 5,000 children holds its lease and slot before its park
// commits. A measurement, not a test: it prints numbers and asserts nothing.
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/park-cost.ts
// Works in a schema of its own (park_cost_<pid>) in that database, dropped at the end.
import pg from 'pg';
import { createWorker, defineSignal, defineTask, enqueueMany, migrate, type TaskContext } from '@leasehold/core';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `park_cost_${process.pid}`;
const RUNS = Number(process.env.PARK_RUNS ?? 200);
const CHILDREN = Number(process.env.PARK_CHILDREN ?? 5_000);
const SPAWNS = Number(process.env.PARK_SPAWNS ?? 3);

/** Every statement a client of the pool sent, and its round trips (one per query call). */
interface Sent {
  trips: number;
  statements: string[];
  /** Per round trip: its first statement's start and how long it took to answer (ms). */
  timed: { text: string; at: number; ms: number }[];
}

function countingPool(sent: Sent): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
      sent.trips++;
      // a simple query may hold several statements
      for (const part of text.split(/;\s*\n/)) if (part.trim() !== '') sent.statements.push(part.trim());
      const at = performance.now();
      const done = () => void sent.timed.push({ text, at, ms: performance.now() - at });
      // pool.query passes a callback; a checked-out client's query returns a promise
      const last = args[args.length - 1];
      if (typeof last === 'function') {
        args[args.length - 1] = (...result: unknown[]) => {
          done();
          return (last as (...r: unknown[]) => unknown)(...result);
        };
      }
      const result = query(...args);
      if (result instanceof Promise) void result.then(done, () => undefined);
      return result;
    };
  });
  return pool;
}

const kinds: [string, RegExp][] = [
  ['BEGIN/COMMIT', /^(BEGIN|COMMIT|ROLLBACK)/],
  ['claim', /SKIP LOCKED/],
  ['steps read', /^SELECT name, done, result/],
  ['heartbeat/presence', /lease_until = now\(\) \+|worker_presence|_worker/],
];
const kindOf = (text: string) => kinds.find(([, re]) => re.test(text))?.[0] ?? text.replace(/\s+/g, ' ').slice(0, 60);

async function parkedCount(admin: pg.Pool): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.task WHERE status = 'waiting'`);
  return rows[0]!.n;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const approved = defineSignal<{ by: string }>('approved');
const never = defineTask('park-never-runs', { handler: (p: { n: number }) => p.n * 0 });
const child = defineTask('park-child', { handler: (p: { n: number }) => p.n });
const flows = {
  sleep: defineTask('park-sleep', { handler: async (_p: { i: number }, ctx: TaskContext) => ctx.sleep('nap', '1h') }),
  signal: defineTask('park-signal', {
    handler: async (_p: { i: number }, ctx: TaskContext) => void (await ctx.waitForSignal(approved, { timeout: '1h' })),
  }),
  children: defineTask('park-children', {
    handler: async (_p: { i: number }, ctx: TaskContext) => {
      // a child nobody runs here: it stays pending and the parent parks
      const kids = await ctx.spawn('kid', never, [{ payload: { n: 0 } }]);
      await ctx.waitForChildren(kids);
    },
  }),
};

/** Statements per run from the worker's start until `runs` runs of `kind` are parked. */
async function parkRound(admin: pg.Pool, kind: keyof typeof flows, runs: number): Promise<void> {
  await admin.query(`TRUNCATE ${schema}.task`);
  const task = flows[kind];
  await enqueueMany(admin, task, Array.from({ length: runs }, (_, i) => ({ payload: { i } })), { schema });
  const sent: Sent = { trips: 0, statements: [], timed: [] };
  const pool = countingPool(sent);
  const worker = createWorker({ pool, schema, tasks: [task], concurrency: 8 });
  await worker.start();
  await until(async () => (await parkedCount(admin)) === runs, `${runs} parked runs`);
  await worker.stop();
  await pool.end();
  const byKind = new Map<string, number>();
  for (const s of sent.statements) byKind.set(kindOf(s), (byKind.get(kindOf(s)) ?? 0) + 1);
  const per = (n: number) => (n / runs).toFixed(2);
  console.log(`\n${kind}: ${runs} run(s) parked, concurrency 8: ${per(sent.trips)} round trips, ${per(sent.statements.length)} statements per run`);
  for (const [k, n] of [...byKind].sort((a, b) => b[1] - a[1])) console.log(`  ${per(n).padStart(7)}  ${k}`);
}

/** A parent spawns `CHILDREN` children and waits for them: spawn start → park commit. */
async function spawnRound(admin: pg.Pool, run: boolean): Promise<void> {
  const times: { spawn: number; park: number }[] = [];
  for (let round = 0; round < SPAWNS; round++) {
    await admin.query(`TRUNCATE ${schema}.task`);
    await admin.query(`VACUUM ANALYZE ${schema}.task`);
    let t0 = 0;
    let t1 = 0;
    let t2 = 0;
    const parent = defineTask('park-fan-out', {
      handler: async (_p: object, ctx: TaskContext) => {
        t0 = performance.now();
        const kids = await ctx.spawn('kids', run ? child : never, Array.from({ length: CHILDREN }, (_, n) => ({ payload: { n } })));
        t1 = performance.now();
        try {
          await ctx.waitForChildren(kids);
        } finally {
          t2 = performance.now();
        }
      },
    });
    await enqueueMany(admin, parent, [{ payload: {} }], { schema });
    const sent: Sent = { trips: 0, statements: [], timed: [] };
    const pool = countingPool(sent);
    const worker = createWorker({ pool, schema, tasks: run ? [parent, child] : [parent], concurrency: 8 });
    await worker.start();
    await until(async () => t2 > 0, 'the parent to park');
    await worker.stop();
    await pool.end();
    times.push({ spawn: t1 - t0, park: t2 - t1 });
    if (process.env.PARK_TRACE) {
      for (const q of sent.timed.filter((q) => q.at >= t0 && q.at <= t2).sort((a, b) => a.at - b.at)) {
        console.log(`    +${(q.at - t0).toFixed(1).padStart(6)} ms ${q.ms.toFixed(1).padStart(6)} ms  ${kindOf(q.text.trim())}`);
      }
    }
    console.log(`  round ${round + 1}: spawn ${(t1 - t0).toFixed(0)} ms, spawn returned → park committed ${(t2 - t1).toFixed(0)} ms, total ${(t2 - t0).toFixed(0)} ms; ${sent.trips} round trips in all`);
  }
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`  median: spawn ${med(times.map((t) => t.spawn)).toFixed(0)} ms, then to park ${med(times.map((t) => t.park)).toFixed(0)} ms`);
}

async function main(): Promise<void> {
  const admin = new pg.Pool({ connectionString: url, max: 4 });
  try {
    await migrate(admin, { schema });
    for (const kind of process.env.PARK_SKIP_RUNS ? [] : (['sleep', 'signal', 'children'] as const)) {
      await parkRound(admin, kind, 1);
      await parkRound(admin, kind, RUNS);
    }
    console.log(`\nparent spawning ${CHILDREN.toLocaleString('en')} children nobody runs, then waitForChildren:`);
    await spawnRound(admin, false);
    console.log(`\nparent spawning ${CHILDREN.toLocaleString('en')} children the same worker runs (no-op), then waitForChildren:`);
    await spawnRound(admin, true);
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

await main();
