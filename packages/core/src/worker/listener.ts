import { sql } from 'kysely';
import { toError } from '../errors.js';
import { execute, type PgQueryable } from '../sql/execute.js';
import type { PgPoolLike } from '../sql/transaction.js';

/** The `pg` client events the listener uses. */
interface NotifyingClient extends PgQueryable {
  on(event: 'notification', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeAllListeners(event?: string): unknown;
  release(err?: Error | boolean): void;
}

/**
 * Holds one dedicated connection that LISTENs on a channel and calls `onNotify` for each
 * notification. When the connection drops it reconnects with backoff, LISTENs again, and calls
 * `onNotify` once (notifications sent meanwhile were missed; polling covers the gap).
 */
export class Listener {
  readonly #pool: PgPoolLike;
  readonly #channel: string;
  readonly #onNotify: () => void;
  readonly #onError: (error: Error) => void;
  #client: NotifyingClient | undefined;
  #stopped = false;
  #connecting: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #failures = 0;

  constructor(pool: PgPoolLike, channel: string, onNotify: () => void, onError: (error: Error) => void) {
    this.#pool = pool;
    this.#channel = channel;
    this.#onNotify = onNotify;
    this.#onError = onError;
  }

  /** Connects and LISTENs; a failure is reported and retried in the background. */
  async start(): Promise<void> {
    this.#stopped = false;
    await (this.#connecting ??= this.#connect());
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    await this.#connecting;
    const client = this.#client;
    this.#client = undefined;
    if (!client) return;
    client.removeAllListeners('notification');
    try {
      await execute(client, sql`UNLISTEN *`);
      client.release();
    } catch {
      client.release(true); // broken connection: destroy it instead of pooling it
    }
  }

  async #connect(): Promise<void> {
    try {
      const client = (await this.#pool.connect()) as NotifyingClient;
      client.on('error', (error) => this.#lost(client, error));
      client.on('notification', () => this.#onNotify());
      // the channel is built from validated identifiers; LISTEN takes no parameters
      await execute(client, sql`LISTEN ${sql.id(this.#channel)}`);
      if (this.#stopped) {
        client.release();
        return;
      }
      this.#client = client;
      this.#failures = 0;
      this.#onNotify(); // anything inserted while we were not listening
    } catch (error) {
      this.#onError(toError(error));
      this.#scheduleReconnect();
    } finally {
      this.#connecting = undefined;
    }
  }

  #lost(client: NotifyingClient, error: Error): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.removeAllListeners('notification');
    client.release(error);
    if (this.#stopped) return;
    this.#onError(error);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#stopped) return;
    this.#failures++;
    const delay = Math.min(10_000, 100 * 2 ** this.#failures) * (0.5 + Math.random() / 2);
    this.#retryTimer = setTimeout(() => void (this.#connecting ??= this.#connect()), delay);
  }
}
