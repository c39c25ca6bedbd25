// The bench's own database: created fresh on the server DATABASE_URL names, dropped at the end,
// so nothing else on that server is touched.
import os from 'node:os';
import pg from 'pg';
import { migrate } from '@leasehold/outbox';

/** Schema every workload's tables live in, inside the bench database. */
export const BENCH_SCHEMA = 'leasehold';

/** `url` with its database name replaced. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.href;
}

/** Drops `name` if a previous run left it behind, then creates it empty. Returns its URL. */
export async function createBenchDatabase(serverUrl: string, name: string): Promise<string> {
  await withClient(serverUrl, async (c) => {
    // the name was checked to be a plain identifier by the option parser
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
  return withDatabase(serverUrl, name);
}

export async function dropBenchDatabase(serverUrl: string, name: string): Promise<void> {
  await withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Empties the bench schema by recreating it: core's task table and the outbox table. */
export async function resetSchema(pool: pg.Pool): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS ${BENCH_SCHEMA} CASCADE`);
  // the outbox's migrate applies core's migration line first
  await migrate(pool, { schema: BENCH_SCHEMA });
}

/** Flushes dirty buffers so a timed section does not pay for an earlier one's checkpoint. */
export async function settle(pool: pg.Pool, { analyze = false } = {}): Promise<void> {
  if (analyze) await pool.query(`ANALYZE`);
  await pool.query('CHECKPOINT');
}

const SETTINGS = [
  'shared_buffers',
  'work_mem',
  'synchronous_commit',
  'fsync',
  'full_page_writes',
  'wal_level',
  'wal_compression',
  'max_wal_size',
  'checkpoint_timeout',
  'max_connections',
  'autovacuum',
  'jit',
];

/** What the report header says about the machine and the server. */
export interface Environment {
  readonly date: string;
  readonly node: string;
  readonly machine: string;
  readonly postgres: string;
  readonly settings: Record<string, string>;
}

export async function describeEnvironment(pool: pg.Pool): Promise<Environment> {
  const version = await pool.query<{ version: string }>('SELECT version()');
  const settings = await pool.query<{ name: string; setting: string }>(
    'SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY($1) ORDER BY name',
    [SETTINGS],
  );
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    machine: `${cpus[0]?.model ?? '?'} × ${cpus.length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
    postgres: version.rows[0]?.version ?? '?',
    settings: Object.fromEntries(settings.rows.map((r) => [r.name, r.setting])),
  };
}

/** `uptime`-style load averages, noted before and after the run (the machine is shared). */
export function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
