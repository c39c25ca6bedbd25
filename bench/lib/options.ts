// Command line of `npm run bench`: which workloads, how many rounds, how big.
import { parseArgs } from 'node:util';

/** Sizes of every workload; `--quick` divides them so the whole run stays under a minute. */
export interface BenchConfig {
  readonly quick: boolean;
  readonly rounds: number;
  /** Workload names to run; empty = all. */
  readonly only: readonly string[];
  readonly json: string | undefined;
  readonly explain: boolean;
  /** Server to connect to; the bench creates and drops its own database there. */
  readonly serverUrl: string;
  readonly database: string;
  readonly keepDatabase: boolean;
  readonly enqueueSingle: { readonly n: number; readonly clients: number };
  readonly enqueueBulk: { readonly n: number; readonly chunk: number };
  readonly process: { readonly n: number; readonly concurrency: number; readonly prefetch: number; readonly batch: number };
  readonly latency: { readonly n: number; readonly rate: number; readonly settleMs: number };
  readonly outbox: { readonly n: number; readonly aggregates: number; readonly concurrency: number };
  readonly heartbeat: { readonly tasks: number; readonly leaseMs: number; readonly measureMs: number };
  readonly claimCost: {
    readonly finished: number;
    readonly pending: number;
    readonly drain: number;
    readonly loops: number;
    readonly batch: number;
  };
  readonly claimBlocked: {
    /** Rows behind one dead head, one table per size (besides one with none). */
    readonly blocked: readonly [number, number];
    /** Pending healthy rows, one per group. */
    readonly healthy: number;
    readonly drain: number;
    readonly loops: number;
    readonly batch: number;
  };
  readonly claimLimits: {
    /** Pending rows per table; `drain` of them are claimed and finished per round. */
    readonly pending: number;
    readonly drain: number;
    readonly loops: number;
    readonly batch: number;
    /** Keys of the per-key variant. */
    readonly keys: number;
  };
}

export const USAGE = `usage: npm run bench -- [--quick] [--rounds N] [--only w1,w2] [--json FILE] [--explain]
                        [--database NAME] [--keep-database]
env: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test): the server; the bench
     creates (and afterwards drops) its own database there, leasehold_bench_<pid> by default.`;

function envInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name] === undefined ? fallback : Number(env[name]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
}

export function parseBenchArgs(argv: readonly string[], env: NodeJS.ProcessEnv): BenchConfig | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      only: { type: 'string' },
      json: { type: 'string' },
      explain: { type: 'boolean', default: false },
      // one per run: a run drops its database WITH (FORCE) at its start and end, so two runs on
      // one server sharing a name would cut each other's connections
      database: { type: 'string', default: `leasehold_bench_${process.pid}` },
      'keep-database': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return 'help';
  const quick = values.quick;
  const rounds = Number(values.rounds ?? (quick ? 1 : 5));
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(values.database)) throw new Error(`--database must be a plain lower-case name`);
  const div = quick ? 10 : 1;
  return {
    quick,
    rounds,
    only: values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : [],
    json: values.json,
    explain: values.explain,
    serverUrl: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    database: values.database,
    keepDatabase: values['keep-database'],
    enqueueSingle: { n: 5000 / div, clients: 8 },
    enqueueBulk: { n: 50_000 / div, chunk: 1000 },
    // the worker's throughput settings as an expert sets them (left out, the worker sizes its
    // claims and buffer itself): 8 running + 492 claimed ahead = 500, graphile-worker's local
    // queue in the peer harness
    process: { n: 20_000 / div, concurrency: 8, prefetch: envInt(env, 'BENCH_PREFETCH', 492), batch: envInt(env, 'BENCH_BATCH', 250) },
    latency: { n: 500 / div, rate: 50, settleMs: quick ? 300 : 1000 },
    outbox: { n: 20_000 / div, aggregates: 1000 / div, concurrency: 8 },
    heartbeat: { tasks: 1000 / div, leaseMs: 3000, measureMs: quick ? 3500 : 6000 },
    claimCost: { finished: 1_000_000 / div, pending: 100_000 / div, drain: 20_000 / div, loops: 4, batch: 50 },
    claimBlocked: { blocked: [50_000 / div, 500_000 / div], healthy: 40_000 / div, drain: 20_000 / div, loops: 4, batch: 50 },
    claimLimits: { pending: 40_000 / div, drain: 20_000 / div, loops: 4, batch: 50, keys: 100 },
  };
}
