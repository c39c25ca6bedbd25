// A private PgBouncer in transaction mode in front of a PostgreSQL server, as a process of its own:
// for the pooler tests (through usePgBouncer, in pgbouncer.ts) and for the soak (bench/soak.ts,
// SOAK_POOLER=pgbouncer). Debian's `pgbouncer` package provides the binary (.ci/run installs it).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, userIds } from '../private-server.js';

const BINARY = process.env.PGBOUNCER ?? '/usr/sbin/pgbouncer';

/** A PgBouncer started by {@link startPgBouncer}. */
export interface RunningPgBouncer {
  readonly port: number;
  readonly proc: ChildProcess;
  readonly dir: string;
}

/** `serverUrl` with PgBouncer's address and the given database. */
export function throughPgBouncer(serverUrl: string, port: number, database: string): string {
  const u = new URL(serverUrl);
  u.host = `127.0.0.1:${port}`;
  u.pathname = `/${database}`;
  return u.toString();
}

/** Stops a PgBouncer at once (closing its server connections) and removes its folder. */
export async function stopPgBouncer({ proc, dir }: RunningPgBouncer): Promise<void> {
  if (proc.exitCode === null) {
    const exited = once(proc, 'exit');
    proc.kill('SIGINT'); // immediate shutdown: closes every server connection
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
    if (proc.exitCode === null) proc.kill('SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
}

/** The database name of a connection URL. */
export function databaseOf(url: string): string {
  return new URL(url).pathname.slice(1);
}

/**
 * Starts PgBouncer in transaction mode on a free port of 127.0.0.1, routing every database name
 * to the server of `adminUrl` as its user.
 */
export async function startPgBouncer(adminUrl: string, poolSize: number): Promise<RunningPgBouncer> {
  if (!existsSync(BINARY)) throw new Error(`no PgBouncer at ${BINARY}: apt-get install pgbouncer (or set PGBOUNCER)`);
  const server = new URL(adminUrl);
  // PgBouncer refuses to run as root: then it runs as the user the server's files belong to
  const asUser = process.getuid?.() === 0 ? userIds('postgres') ?? userIds('nobody') : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-pgbouncer-'));
  chmodSync(dir, 0o755);
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const target = [`host=${server.hostname}`, `port=${server.port || 5432}`, `user=${decodeURIComponent(server.username) || 'postgres'}`];
    if (server.password) target.push(`password=${decodeURIComponent(server.password)}`);
    const ini = join(dir, 'pgbouncer.ini');
    writeFileSync(
      ini,
      [
        '[databases]',
        // every database of the server, by the name the client asks for: each test file's own
        `* = ${target.join(' ')}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = any',
        'pool_mode = transaction',
        `default_pool_size = ${poolSize}`,
        'max_client_conn = 1000',
        'max_db_connections = 0',
        'ignore_startup_parameters = extra_float_digits,options',
        'server_check_delay = 0',
        'logfile =',
        'pidfile =',
        '',
      ].join('\n'),
    );
    chmodSync(ini, 0o644);
    const proc = spawn(BINARY, [ini], { stdio: ['ignore', 'ignore', 'pipe'], uid: asUser?.uid, gid: asUser?.gid });
    let log = '';
    proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log = (log + chunk).slice(-4_000)));
    if (await listening(port, proc, 10_000)) {
      await ready(adminUrl, port);
      return { port, proc, dir };
    }
    proc.kill('SIGKILL');
    // another process may have taken the port between our probe and PgBouncer's bind
    if (attempt >= 3) throw new Error(`PgBouncer did not start:\n${log}`);
  }
}


/** Waits until PgBouncer accepts connections on `port`, or has exited, or `deadlineMs` passed. */
async function listening(port: number, proc: ChildProcess, deadlineMs: number): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until && proc.exitCode === null) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1');
    });
    if (open) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

/** One statement through PgBouncer to the server's own database, so a login works end to end. */
async function ready(adminUrl: string, port: number): Promise<void> {
  const u = new URL(adminUrl);
  u.host = `127.0.0.1:${port}`;
  const client = new pg.Client({ connectionString: u.toString() });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('SELECT 1');
  } finally {
    await client.end();
  }
}
