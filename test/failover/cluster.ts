// A private primary and a streaming standby, for the failover test: both run the machine's
// PostgreSQL binaries (Debian's, /usr/lib/postgresql/<version>/bin; PG_BINDIR overrides), as the
// `postgres` OS user when we are root, on free ports of 127.0.0.1, in one temp folder that `stop()`
// removes. The standby is a `pg_basebackup -R` of the primary and streams through a proxy the test
// can freeze (the replication link); the application reaches whichever server is primary through
// another proxy, which `failOver()` switches to the promoted standby.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, userIds } from '../private-server.js';
import { SwitchProxy } from './switch-proxy.js';

/** Bounds of every wait here: nothing hangs silently. */
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const DATABASE = 'failover';

/** A running primary + standby; see the file comment. */
export interface Cluster {
  /** The application's URL: the `failover` database through the switching proxy. */
  readonly url: string;
  /** The primary's own URL (the `failover` database), bypassing the proxy. */
  readonly primaryUrl: string;
  /** The standby's own URL (the `failover` database), bypassing the proxy. */
  readonly standbyUrl: string;
  /** The proxy the application connects through. */
  readonly proxy: SwitchProxy;
  /** Whether the primary waits for the standby to flush each commit (`synchronous_standby_names`). */
  readonly synchronous: boolean;
  /**
   * Holds back the WAL the standby receives from now on, after waiting until it has replayed
   * everything the primary had written when called: what commits on the primary afterwards is
   * lost at a failover. Resolves with the primary's WAL position the standby has reached.
   */
  freezeReplication(): Promise<string>;
  /**
   * The failover: the primary stops at once (immediate shutdown, as a crash: no checkpoint, its
   * sessions cut); `detectMs` later (a failover manager's detection time: meanwhile new
   * connections are refused; `whileDown` is called at its start) the standby is promoted (`pg_promote()`, waited for), and the
   * application's proxy resets its connections and points at the promoted server. Returns when
   * each step ended (`performance.now()`).
   */
  failOver(options?: { detectMs?: number; whileDown?: () => void; beforeSwitch?: (promotedUrl: string) => Promise<void> }): Promise<{ crashedAt: number; promotedAt: number; switchedAt: number }>;
  /** Stops both servers and the proxies and removes the folder. Idempotent. */
  stop(): Promise<void>;
  /** The last lines each server logged, for a failure's message. */
  logs(): string;
}

/** The folder of the newest PostgreSQL installed with pg_basebackup, or PG_BINDIR. */
export function postgresBinaries(): string {
  const fromEnv = process.env.PG_BINDIR;
  if (fromEnv) return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_basebackup'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions.length === 0) throw new Error(`no PostgreSQL with pg_basebackup under ${root}: apt-get install postgresql (or set PG_BINDIR)`);
  return join(root, versions[0]!, 'bin');
}

interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/**
 * Starts a primary, migrates nothing (the caller does, through the proxy), takes a standby and
 * waits until it streams — synchronously when `synchronous` (set on the primary only, after the
 * backup: the promoted standby must not wait for a standby of its own).
 */
export async function startCluster(options: { synchronous: boolean }): Promise<Cluster> {
  const bin = postgresBinaries();
  const runAs = process.getuid?.() === 0 ? userIdsOrFail('postgres') : undefined;
  const folder = mkdtempSync(join(tmpdir(), 'leasehold-failover-'));
  chmodSync(folder, 0o755);
  if (runAs) chownSync(folder, runAs.uid, runAs.gid);
  const primaryDir = join(folder, 'primary');
  const standbyDir = join(folder, 'standby');
  const servers: Server[] = [];
  const proxies: SwitchProxy[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        await Promise.all(proxies.map((p) => p.close()));
        await Promise.all(servers.map((s) => s.stop()));
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    })());
  const logs = () => servers.map((s) => `--- ${s.name} ---\n${s.log}`).join('\n');
  try {
    await run(join(bin, 'initdb'), ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale', '--no-sync'], runAs);
    const primary = await startServer('primary', bin, primaryDir, runAs, []);
    servers.push(primary);
    await query(primary.url('postgres'), `CREATE DATABASE ${DATABASE}`);

    // the standby streams through a proxy, so the test can hold its WAL back
    const replication = new SwitchProxy(primary.port);
    proxies.push(replication);
    await replication.listen();
    await run(join(bin, 'pg_basebackup'), ['-D', standbyDir, '-h', '127.0.0.1', '-p', String(replication.port), '-U', 'postgres', '-R', '-c', 'fast', '-X', 'stream', '--no-sync'], runAs);
    const standby = await startServer('standby', bin, standbyDir, runAs, []);
    servers.push(standby);
    if (options.synchronous) {
      await query(primary.url('postgres'), `ALTER SYSTEM SET synchronous_standby_names = '*'`);
      await query(primary.url('postgres'), 'SELECT pg_reload_conf()');
    }
    await until(async () => {
      const rows = await query(primary.url('postgres'), 'SELECT sync_state FROM pg_stat_replication WHERE state = $1', ['streaming']);
      return rows.some((r) => r.sync_state === (options.synchronous ? 'sync' : 'async'));
    }, `the standby streaming ${options.synchronous ? 'synchronously' : 'asynchronously'}`);

    const proxy = new SwitchProxy(primary.port);
    proxies.push(proxy);
    await proxy.listen();
    const through = (port: number) => `postgres://postgres@127.0.0.1:${port}/${DATABASE}`;
    return {
      url: through(proxy.port),
      primaryUrl: primary.url(DATABASE),
      standbyUrl: standby.url(DATABASE),
      proxy,
      synchronous: options.synchronous,
      async freezeReplication() {
        const [{ lsn }] = (await query(primary.url('postgres'), 'SELECT pg_current_wal_lsn()::text AS lsn')) as [{ lsn: string }];
        await until(async () => {
          const [row] = await query(standby.url('postgres'), 'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up', [lsn]);
          return row?.caught_up === true;
        }, `the standby replaying up to ${lsn}`);
        replication.freeze();
        return lsn;
      },
      async failOver({ detectMs = 0, whileDown, beforeSwitch } = {}) {
        await primary.crash();
        const crashedAt = performance.now();
        whileDown?.();
        await new Promise((r) => setTimeout(r, detectMs));
        const [row] = await query(standby.url('postgres'), 'SELECT pg_promote(true, 30) AS promoted');
        if (row?.promoted !== true) throw new Error(`the standby was not promoted within 30 s\n${logs()}`);
        const promotedAt = performance.now();
        await beforeSwitch?.(standby.url(DATABASE));
        proxy.switchTo(standby.port);
        return { crashedAt, promotedAt, switchedAt: performance.now() };
      },
      stop,
      logs,
    };
  } catch (error) {
    const detail = logs();
    await stop().catch(() => undefined);
    throw new Error(`${(error as Error).message}\n${detail}`, { cause: error });
  }
}

interface Server {
  readonly name: string;
  readonly port: number;
  readonly log: string;
  url(database: string): string;
  /** Immediate shutdown (SIGQUIT): no checkpoint, every session cut, as a crash. */
  crash(): Promise<void>;
  /** Fast shutdown, then SIGKILL after a while. */
  stop(): Promise<void>;
}

async function startServer(name: string, bin: string, dataDir: string, runAs: RunAs | undefined, flags: string[]): Promise<Server> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const args = [
      '-D', dataDir, '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'wal_level=replica', '-c', 'max_wal_senders=4',
      '-c', 'max_connections=100', '-c', 'shared_buffers=32MB', '-c', 'wal_sender_timeout=5s',
      '-c', 'wal_receiver_status_interval=1s',
      ...flags,
    ];
    const child = spawn(join(bin, 'postgres'), args, { ...runAs, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let log = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log = (log + chunk).slice(-8_000)));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // a test run that ends without its afterAll (killed, crashed) leaves no server behind
    const killOnExit = () => void child.kill('SIGKILL');
    process.once('exit', killOnExit);
    void exited.then(() => process.off('exit', killOnExit));
    const ready = await readyOrExited(port, child, exited);
    if (!ready) {
      // another process may have taken the port between our probe and the server's bind
      if (attempt < 3 && /could not bind|Address already in use/.test(log)) continue;
      throw new Error(`PostgreSQL (${name}) did not start:\n${log}`);
    }
    const isGone = () => child.exitCode !== null || child.signalCode !== null;
    const waitExit = (ms: number) => Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(r, ms, false).unref())]);
    return {
      name,
      port,
      get log() {
        return log;
      },
      url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
      async crash() {
        if (isGone()) return;
        child.kill('SIGQUIT');
        if (!(await waitExit(STOP_TIMEOUT_MS))) child.kill('SIGKILL');
        await waitExit(STOP_TIMEOUT_MS);
      },
      async stop() {
        if (isGone()) return;
        child.kill('SIGINT');
        if (await waitExit(STOP_TIMEOUT_MS)) return;
        child.kill('SIGKILL');
        await waitExit(STOP_TIMEOUT_MS);
      },
    };
  }
}

/** Polls the server with a login until it answers, it exits, or the start's bound passes. */
async function readyOrExited(port: number, child: ChildProcess, exited: Promise<void>): Promise<boolean> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = performance.now() + START_TIMEOUT_MS;
  while (!gone && performance.now() < deadline) {
    try {
      await query(`postgres://postgres@127.0.0.1:${port}/postgres`, 'SELECT 1');
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  if (!gone) child.kill('SIGKILL');
  return false;
}

/** One statement on a connection of its own. */
export async function query(url: string, text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Record<string, unknown>[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Polls `check` every 20 ms until it is true; throws after `deadlineMs` naming `what`. */
export async function until(check: () => Promise<boolean> | boolean, what: string, deadlineMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = performance.now() + deadlineMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet reachable: try again
    }
    if (performance.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function run(file: string, args: string[], runAs: RunAs | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { ...runAs, timeout: START_TIMEOUT_MS * 2, env: { ...process.env, LC_ALL: 'C' } }, (error, stdout, stderr) =>
      error ? reject(new Error(`${file} failed: ${error.message}\n${stdout}${stderr}`, { cause: error })) : resolve(),
    );
  });
}

function userIdsOrFail(name: string): RunAs {
  const ids = userIds(name);
  if (ids === undefined) throw new Error(`PostgreSQL cannot run as root, and there is no '${name}' user to run it as`);
  return ids;
}
