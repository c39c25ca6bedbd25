// A soak in the conditions production reaches, checked at the end: two worker processes at the
// library defaults over one task table, SIGKILLed and restarted while they work; another session
// holding a REPEATABLE READ snapshot the whole time (a long report); 50,000 ordered rows waiting
// behind their groups' heads from the start; and, each second, plain tasks, tasks enqueued with a
// start time, tasks whose first attempt fails, workflow runs that sleep, and tasks under a
// concurrency limit, plus, every 10 s, a producer transaction that commits 6.5 s after it took its
// ids; each second five workflows that fan out to five children each; and each second it cancels
// two of the sleeping runs and one of the fan-outs (with its children) started the second before. Each killed
// worker comes back with new code, a deploy under running workflows: its sleeping workflow has a
// step behind a patch and one more at its end, as version 2 that accepts version 1's runs, and from
// the first kill on the runner starts version 2 runs (SOAK_DEPLOY=0: the same code throughout). Optionally through a pooler in transaction mode (SOAK_POOLER_URL: the same database through,
// say, PgBouncer; the workers LISTEN on a direct connection).
//
// At the end it checks what users rely on and exits 1 if any fails: every task done (none pending,
// running, sleeping or dead; a cancelled run cancelled or done), every done task's effect recorded,
// each ordered group's effects in order, and no warning or error in the workers' logs (a
// `deadlock detected` there found the heartbeat's lock order, see docs/guarantees.md). It prints effects repeated (from the kills: at-least-once) and how
// late the scheduled tasks and the sleeps started (not checked: a loaded machine's figures).
//   DATABASE_URL=postgres://… npx tsx --conditions=@leasehold/source bench/soak.ts
//   SOAK_SECONDS: how long it produces (default 60); SOAK_RATE: a multiplier of the rates (1);
//   SOAK_ORDERED_ROWS: ordered rows up front, in groups of 500 (50000); SOAK_KILLS (2);
//   SOAK_HOLD=0: no snapshot held; SOAK_POOLER_URL (none), or SOAK_POOLER=pgbouncer: a private
//   PgBouncer in transaction mode, started here and stopped at the end (as .ci/run runs it)
// Works in a schema of its own (soak_<pid>) in that database, dropped at the end.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { cancelTask, enqueueMany, migrate } from '@leasehold/core';
import { databaseOf, startPgBouncer, stopPgBouncer, throughPgBouncer } from '../test/pooler/pgbouncer-process.js';
import { holdSnapshot, releaseSnapshot } from '../test/hold-snapshot.js';
import { soakTasks } from './soak-tasks.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (![undefined, '', 'pgbouncer'].includes(process.env.SOAK_POOLER)) throw new Error('SOAK_POOLER must be pgbouncer (or unset)');
// server connections for the two workers' pools (10 each) and the ones a restarted worker opens
const bouncer = process.env.SOAK_POOLER === 'pgbouncer' ? await startPgBouncer(url, 20) : undefined;
process.once('exit', () => bouncer?.proc.kill('SIGKILL'));
const POOLER = bouncer ? throughPgBouncer(url, bouncer.port, databaseOf(url)) : (process.env.SOAK_POOLER_URL ?? '');
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const RATE = Number(process.env.SOAK_RATE ?? 1);
const ORDERED_ROWS = Number(process.env.SOAK_ORDERED_ROWS ?? 50_000);
const KILLS = Number(process.env.SOAK_KILLS ?? 2);
const HOLD = process.env.SOAK_HOLD !== '0';
const DEPLOY = process.env.SOAK_DEPLOY !== '0';
const GROUP_SIZE = 500;
const SCHEMA = `soak_${process.pid}`;
const wallNow = () => performance.timeOrigin + performance.now();

const admin = new pg.Pool({ connectionString: url, max: 6 });
await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
await migrate(admin, { schema: SCHEMA });
await admin.query(`CREATE TABLE ${SCHEMA}.soak_effect (kind text NOT NULL, key text NOT NULL, due_ms float8, at_ms float8 NOT NULL, pid int NOT NULL, place text)`);
let tasks = soakTasks(SCHEMA, admin);

const holder = HOLD ? await holdSnapshot(url, 'soak-snapshot') : undefined;

// the workers' warnings and errors (their logger writes those to stderr, info to stdout), and a
// worker that exits unasked: each one is a finding
const logged: string[] = [];
const children: ChildProcess[] = [];
const asked = new Set<ChildProcess>();
async function startChild(slot: number, version: 1 | 2 = 1): Promise<void> {
  const child = fork(new URL('./soak-child.ts', import.meta.url), [SCHEMA, url, POOLER, String(version)], {
    execArgv: ['--conditions=@leasehold/source', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.startsWith('[leasehold]')) logged.push(line);
    process.stderr.write(`${line}\n`);
  });
  child.once('exit', (code, signal) => {
    if (!asked.has(child)) logged.push(`a worker exited unasked (code ${code}, signal ${signal})`);
  });
  children[slot] = child;
  await once(child, 'message');
}
await Promise.all([startChild(0), startChild(1)]);

const expected = new Map<string, number>();
const count = (kind: string, n: number) => expected.set(kind, (expected.get(kind) ?? 0) + n);
let seq = 0;
const key = (prefix: string) => `${prefix}${seq++}`;

for (let first = 0; first < ORDERED_ROWS; first += 5_000) {
  const items = Array.from({ length: Math.min(5_000, ORDERED_ROWS - first) }, (_, k) => {
    const n = first + k;
    return { payload: { k: key('o'), g: `g${Math.floor(n / GROUP_SIZE)}`, seq: n % GROUP_SIZE }, groupKey: `g${Math.floor(n / GROUP_SIZE)}` };
  });
  await enqueueMany(admin, tasks.ordered, items, { schema: SCHEMA });
  count('ordered', items.length);
}
console.log(`soak ${SCHEMA}: ${ORDERED_ROWS} ordered rows, ${SECONDS} s of mixed work ×${RATE}, ${KILLS} kills${DEPLOY && KILLS > 0 ? ' (each a deploy)' : ''}, snapshot ${HOLD ? 'held' : 'not held'}${POOLER ? ', workers through the pooler' : ''}`);

const t0 = wallNow();
const killAt = new Set(Array.from({ length: KILLS }, (_, k) => Math.floor(((k + 1) * SECONDS) / (KILLS + 1))));
const late: Promise<void>[] = [];
let kills = 0;
let lastRuns: { id: string }[] = [];
let lastFans: { id: string }[] = [];
const cancelled = new Set<string>();
for (let s = 0; s < SECONDS; s++) {
  const now = wallNow();
  const n = (per: number) => Math.max(1, Math.round(per * RATE));
  const o = { schema: SCHEMA };
  const batch = <T>(k: number, f: () => T) => Array.from({ length: n(k) }, f);
  await enqueueMany(admin, tasks.plain, batch(200, () => ({ payload: { k: key('p') } })), o);
  await enqueueMany(admin, tasks.at, batch(40, () => {
    const due = now + Math.random() * 8_000;
    return { payload: { k: key('a'), due }, runAt: new Date(due) };
  }), o);
  await enqueueMany(admin, tasks.retry, batch(20, () => ({ payload: { k: key('r'), after: 200 + Math.random() * 3_000 } })), o);
  const runs = await enqueueMany(admin, tasks.sleep, batch(20, () => ({ payload: { k: key('s'), ms: 300 + Math.random() * 5_000 } })), o);
  // a run of the second before: sleeping, running or done by now
  for (const run of lastRuns.sort(() => Math.random() - 0.5).slice(0, 2)) {
    cancelled.add(run.id);
    await cancelTask(admin, run.id, { schema: SCHEMA, reason: 'soak' });
  }
  lastRuns = runs;
  // fan-outs: one of the second before cancelled, with its unfinished children
  const fans = await enqueueMany(admin, tasks.fan, batch(5, () => ({ payload: { k: key('f') } })), o);
  for (const fan of lastFans.slice(0, 1)) for (const id of (await cancelTask(admin, fan.id, { schema: SCHEMA, reason: 'soak' })).cancelled) cancelled.add(id);
  lastFans = fans;
  await enqueueMany(admin, tasks.limited, batch(60, () => ({ payload: { k: key('l') } })), o);
  for (const [kind, per] of [['plain', 200], ['at', 40], ['retry', 20], ['sleep', 20], ['limited', 60], ['fan', 5]] as const) count(kind, n(per));
  if (s % 10 === 5) {
    // a producer's long transaction: its ids and due times taken now, visible 6.5 s later
    const c = await admin.connect();
    await c.query('BEGIN');
    await enqueueMany(c, tasks.plain, Array.from({ length: 50 }, () => ({ payload: { k: key('p') } })), o);
    await enqueueMany(c, tasks.at, Array.from({ length: 20 }, () => ({ payload: { k: key('late-a'), due: wallNow() }, runAt: new Date() })), o);
    count('plain', 50);
    count('at', 20);
    late.push(new Promise<void>((r) => setTimeout(r, 6_500)).then(async () => {
      await c.query('COMMIT');
      c.release();
    }));
  }
  if (killAt.has(s)) {
    const slot = kills++ % 2;
    asked.add(children[slot]!);
    children[slot]!.kill('SIGKILL');
    await once(children[slot]!, 'exit');
    await new Promise((r) => setTimeout(r, 1_000));
    await startChild(slot, DEPLOY ? 2 : 1);
    // new producers of the new code start new runs at its version
    if (DEPLOY) tasks = soakTasks(SCHEMA, admin, 2);
  }
  const wait = t0 + (s + 1) * 1_000 - wallNow();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}
await Promise.all(late);
console.log(`produced in ${((wallNow() - t0) / 1000).toFixed(1)} s: ${[...expected].map(([k, v]) => `${k} ${v}`).join(', ')}`);

const deadline = wallNow() + 300_000;
let open = -1;
while (wallNow() < deadline) {
  const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}.task WHERE status IN ('pending', 'processing', 'waiting')`);
  open = rows[0]!.n;
  if (open === 0) break;
  await new Promise((r) => setTimeout(r, 1_000));
}
console.log(`drained ${((wallNow() - t0) / 1000).toFixed(1)} s after the start`);

const failures: string[] = [];
if (open !== 0) failures.push(`${open} tasks still open 300 s after the producers stopped`);
const { rows: ended } = await admin.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${SCHEMA}.task GROUP BY 1 ORDER BY 1`);
console.log(`tasks by status: ${ended.map((r) => `${r.status} ${r.n}`).join(', ')} (${cancelled.size} runs cancelled)`);
const { rows: wrong } = await admin.query<{ id: string; status: string }>(
  `SELECT id::text, status FROM ${SCHEMA}.task WHERE status <> 'done' AND NOT (status = 'cancelled' AND id = ANY($1::bigint[]))`,
  [[...cancelled]],
);
if (wrong.length > 0) failures.push(`${wrong.length} tasks ended otherwise than done (or cancelled when cancelled), e.g. ${wrong[0]!.id} ${wrong[0]!.status}`);
// the children are not counted: a fan-out cancelled before it spawned has none
const total = [...expected.values()].reduce((a, b) => a + b, 0);
const { rows: enqueued } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}.task WHERE name <> 'soak-leaf'`);
if (enqueued[0]!.n !== total) failures.push(`${enqueued[0]!.n} task rows for ${total} enqueued`);
const { rows: effects } = await admin.query<{ kind: string; keys: number; effects: number }>(
  `SELECT kind, count(DISTINCT key)::int AS keys, count(*)::int AS effects FROM ${SCHEMA}.soak_effect GROUP BY 1 ORDER BY 1`,
);
for (const [kind, want] of [...expected, ['leaf', NaN] as const]) {
  const got = effects.find((r) => r.kind === kind);
  console.log(`${kind}: ${got?.keys ?? 0}${Number.isNaN(want) ? '' : ` of ${want}`} tasks took effect, ${(got?.effects ?? 0) - (got?.keys ?? 0)} effects repeated`);
}
const { rows: missing } = await admin.query<{ n: number }>(`
  SELECT count(*)::int AS n FROM ${SCHEMA}.task AS t
  WHERE t.status = 'done' AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.soak_effect AS e WHERE e.key = t.payload->>'k')`);
if (missing[0]!.n > 0) failures.push(`${missing[0]!.n} tasks done without their effect`);
const { rows: order } = await admin.query<{ bad: number }>(`
  WITH first AS (SELECT split_part(place, ':', 1) AS g, split_part(place, ':', 2)::int AS seq, min(at_ms) AS at
                 FROM ${SCHEMA}.soak_effect WHERE kind = 'ordered' GROUP BY 1, 2)
  SELECT count(*)::int AS bad FROM (SELECT at, lag(at) OVER (PARTITION BY g ORDER BY seq) AS before FROM first) AS x WHERE before > at`);
if (order[0]!.bad > 0) failures.push(`${order[0]!.bad} ordered tasks ran before the one ahead of them`);
if (DEPLOY && KILLS > 0) {
  const { rows: versions } = await admin.query<{ version: number; runs: number; audit: number; after: number }>(`
    SELECT t.version, count(*)::int AS runs,
           count(*) FILTER (WHERE EXISTS (SELECT 1 FROM ${SCHEMA}.task_step AS s WHERE s.task_id = t.id AND s.name = 'audit'))::int AS audit,
           count(*) FILTER (WHERE EXISTS (SELECT 1 FROM ${SCHEMA}.task_step AS s WHERE s.task_id = t.id AND s.name = 'after'))::int AS after
    FROM ${SCHEMA}.task AS t WHERE t.name = 'soak-sleep' GROUP BY 1 ORDER BY 1`);
  console.log(`the deploy: sleeping runs ${versions.map((r) => `of version ${r.version} ${r.runs} (the patched step in ${r.audit}, the new last step in ${r.after})`).join(', ')}`);
}
const { rows: lateness } = await admin.query<{ kind: string; n: number; p: number[] }>(`
  SELECT kind || CASE WHEN key LIKE 'late-%' THEN ' (committed 6.5 s after due)' ELSE '' END AS kind, count(*)::int AS n,
         percentile_cont(ARRAY[0.5, 0.99, 1]) WITHIN GROUP (ORDER BY at_ms - due_ms) AS p
  FROM ${SCHEMA}.soak_effect WHERE due_ms IS NOT NULL GROUP BY 1 ORDER BY 1`);
for (const r of lateness) console.log(`late, ${r.kind}: p50 / p99 / max ${r.p.map((x) => Math.round(x)).join(' / ')} ms (${r.n})`);
if (logged.length > 0) failures.push(`${logged.length} lines in the workers' logs, the first: ${logged[0]}`);

for (const child of children) {
  asked.add(child);
  child.kill('SIGTERM');
}
await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
if (holder) await releaseSnapshot(holder);
if (process.env.SOAK_KEEP !== '1') await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
await admin.end();
if (bouncer) await stopPgBouncer(bouncer);
console.log(failures.length === 0 ? 'soak: every check passed' : `soak: FAILED\n- ${failures.join('\n- ')}`);
process.exitCode = failures.length === 0 ? 0 : 1;
