// `npm run bench [-- --quick]`: leasehold's benchmarks. Creates a database of its own on the
// server DATABASE_URL names, runs each workload for several rounds, prints a table of medians
// (min–max) with the PostgreSQL version and settings, and drops the database again.
// No assertions on the numbers: the exit code is 1 only when a run fails or fails its sanity check.
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { createBenchDatabase, describeEnvironment, dropBenchDatabase, loadAverage } from './lib/bench-database.js';
import { killAllChildren } from './lib/child.js';
import { parseBenchArgs, USAGE } from './lib/options.js';
import { hasFailures, renderDescriptions, renderHeader, renderProblems, renderTable, type WorkloadRecord } from './lib/report.js';
import type { BenchContext, RoundResult, Workload } from './lib/workload.js';
import { WORKLOADS } from './workloads/index.js';

const log = (message: string) => console.error(message);

async function main(): Promise<number> {
  const config = parseBenchArgs(process.argv.slice(2), process.env);
  if (config === 'help') {
    console.log(`${USAGE}\nworkloads: ${WORKLOADS.map((w) => w.name).join(', ')}`);
    return 0;
  }
  const unknown = config.only.filter((n) => !WORKLOADS.some((w) => w.name === n));
  if (unknown.length) throw new Error(`unknown workload(s) ${unknown.join(', ')}; known: ${WORKLOADS.map((w) => w.name).join(', ')}`);
  const selected = WORKLOADS.filter((w) => (config.only.length === 0 ? !w.onlyWhenNamed : config.only.includes(w.name)));

  const loadBefore = loadAverage();
  const url = await createBenchDatabase(config.serverUrl, config.database);
  const cleanup = async () => {
    killAllChildren();
    if (!config.keepDatabase) await dropBenchDatabase(config.serverUrl, config.database);
  };
  process.once('SIGINT', () => {
    log('interrupted: cleaning up');
    void cleanup().finally(() => process.exit(130));
  });
  const admin = new pg.Pool({ connectionString: url, max: 3 });
  const ctx: BenchContext = { config, url, admin, log };
  const t0 = Date.now();
  try {
    const env = await describeEnvironment(admin);
    log(`bench database ${config.database} on ${env.postgres.split(' on ')[0]}; ${config.rounds} round(s); load ${loadBefore}`);
    const records = await runAll(ctx, selected);
    const header = renderHeader(config, env, { before: loadBefore, after: loadAverage() });
    console.log(`\n${header}\n\n${renderTable(records)}\n\n${renderDescriptions(config, records)}\n`);
    const problems = renderProblems(records);
    if (problems) console.log(`${problems}\n`);
    console.log(`elapsed ${Math.round((Date.now() - t0) / 1000)} s`);
    if (config.json) writeFileSync(config.json, JSON.stringify({ env, config, records: records.map(toJson) }, null, 2));
    return hasFailures(records) ? 1 : 0;
  } finally {
    await admin.end();
    await cleanup();
  }
}

/** Round-major order (round 1: every workload; round 2: …) so slow drift in machine load spreads over all. */
async function runAll(ctx: BenchContext, workloads: readonly Workload[]): Promise<WorkloadRecord[]> {
  const records = new Map<Workload, { rounds: WorkloadRecord['rounds']; unavailable?: string }>();
  for (const w of workloads) {
    const reason = w.unavailable ? await w.unavailable() : null;
    records.set(w, reason ? { rounds: [], unavailable: reason } : { rounds: [] });
    if (reason) log(`${w.name}: n/a (${reason})`);
  }
  const runnable = workloads.filter((w) => !records.get(w)!.unavailable);
  const setUp = new Set<Workload>();
  try {
    for (let round = 1; round <= ctx.config.rounds; round++) {
      for (const w of runnable) {
        if (w.maxRounds !== undefined && round > w.maxRounds) continue;
        const record = records.get(w)!;
        let result: RoundResult | { error: string };
        try {
          if (!setUp.has(w)) {
            setUp.add(w);
            await w.setup?.(ctx);
          }
          result = await w.round(ctx, round);
        } catch (err) {
          result = { error: String(err instanceof Error ? err.message : err).split('\n')[0]! };
        }
        record.rounds.push(result);
        log(`[round ${round}] ${w.name.padEnd(16)} ${describeRound(w, result)}`);
      }
    }
  } finally {
    for (const w of setUp) await w.teardown?.(ctx).catch((err: unknown) => log(`${w.name} teardown failed: ${String(err)}`));
  }
  return workloads.map((w) => ({ workload: w, ...records.get(w)! }));
}

function describeRound(w: Workload, r: RoundResult | { error: string }): string {
  if ('error' in r) return `FAILED: ${r.error}`;
  const values = w.metrics.map((m) => `${m.key} ${formatValue(r.values[m.key])}`).join(', ');
  return `${values}${r.check === 'ok' ? '' : `  !! ${r.check}`}`;
}

const formatValue = (x: number | undefined) => (x === undefined ? 'n/a' : Number.isFinite(x) ? x.toFixed(x >= 100 ? 0 : 2) : 'NaN');

function toJson(r: WorkloadRecord) {
  return { name: r.workload.name, unavailable: r.unavailable, rounds: r.rounds };
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    killAllChildren();
    process.exit(1);
  },
);
