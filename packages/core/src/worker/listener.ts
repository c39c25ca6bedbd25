import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { toError } from '../errors.js';
import { execute, type PgQueryable } from '../sql/execute.js';
import { isPgPool, type PgPoolFactory, type PgPoolLike } from '../sql/transaction.js';
import { settlesBy } from './settles-by.js';

/**
 * How the LISTEN connection plans what the worker sends on it (its claims and wake-up arms, see
 * {@link Listener.run}): each statement once, generically, from its first run, and never by a
 * sequential scan of a table an index could serve. By default PostgreSQL plans a named statement
 * afresh, for its values, on its first five runs on a connection, and a claim takes 1–17 ms to
 * plan: a starting worker spent some 45–100 ms of server CPU in those before settling on the
 * generic plan it then kept. A generic plan lasts until the table's statistics change, so one
 * made while the table was small (a worker started on an empty queue, with no ANALYZE since)
 * would go on scanning it whole when it has grown; each part of a claim reads a partial index or
 * looks rows up by primary key, so it never needs a sequential scan (bench/RESULTS.md, issue 35).
 * The connection is the listener's alone and is closed, never pooled, so nothing else inherits
 * these. Their values are constants, not input.
 * @internal
 */
export const CLAIM_CONNECTION_SETTINGS = sql`SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off`;

/** The `pg` client surface the listener uses. */
interface NotifyingClient extends PgQueryable {
  on(event: 'notification', listener: (message: { payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeAllListeners(event: 'notification'): unknown;
}

/** A `pg` `Client` of the listener's own. */
interface OwnClient extends NotifyingClient {
  connect(): Promise<unknown>;
  end(): Promise<unknown>;
  readonly connection?: { readonly stream?: { destroy?(): void } };
}

/** One LISTEN connection, however it was obtained. */
interface ListenConnection {
  readonly client: NotifyingClient;
  /** Closes it politely; after `graceMs` without an answer, cuts its socket. */
  close(graceMs: number): Promise<void>;
}

/**
 * Holds one connection that LISTENs on a channel and calls `onNotify` for each notification.
 * When the connection drops it reconnects with backoff, LISTENs again, and calls `onNotify` once
 * (notifications sent meanwhile were missed; polling covers the gap).
 *
 * The connection is the listener's own `pg` client, built like the pool's (`new pool.Client(
 * pool.options)`), not one of the pool's: a pool of one connection would otherwise be held by
 * LISTEN forever and every claim would wait for it, and a pooled client would collect the
 * listener's handlers across starts. Only a pool that is not a `pg` pool (no `Client`) lends one
 * of its connections instead, and gets it back destroyed.
 *
 * Behind a pooler in transaction mode, LISTEN through the pool's address runs on whichever server
 * connection is free and never delivers: `direct` is then a connection string that reaches
 * PostgreSQL itself (the pool's other settings, such as `ssl`, still apply), and {@link probe}
 * proves that notifications sent through the pool arrive on it.
 */
export class Listener {
  readonly #open: (track: (cut: () => void) => void) => Promise<ListenConnection>;
  readonly #channel: string;
  /** `payload`: the notification's; undefined after a (re)connect, when any may have been missed. */
  readonly #onNotify: (payload?: string) => void;
  readonly #onError: (error: Error) => void;
  #connection: ListenConnection | undefined;
  /** Cuts the connection being opened, if any. */
  #cutOpening: (() => void) | undefined;
  #stopped = false;
  #connecting: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  /** Statements sent on the LISTEN connection through {@link run} and not settled yet. */
  readonly #running = new Set<Promise<unknown>>();
  /** {@link probe}s waiting for their payload. */
  readonly #probes = new Map<string, () => void>();

  constructor(pool: PgPoolLike, channel: string, onNotify: (payload?: string) => void, onError: (error: Error) => void, direct?: string) {
    this.#open = isPgPool<OwnClient>(pool) ? (track) => openOwnClient(pool, track, direct) : () => borrow(pool);
    this.#channel = channel;
    this.#onNotify = onNotify;
    this.#onError = onError;
  }

  /** Whether the LISTEN connection is up, so that notifications reach the worker. */
  get listening(): boolean {
    return this.#connection !== undefined;
  }

  /**
   * Sends `statement` on the LISTEN connection, or returns undefined when it is not up. The
   * worker's claims go here: the server process behind this connection has just woken to deliver
   * a notification, while a pooled one may still be asleep (about 0.08 ms of the wake-to-start
   * path, bench/RESULTS.md), and on one connection each claim statement is planned once rather
   * than on every pooled connection (PostgreSQL plans a prepared statement afresh for its first
   * five runs on a connection). `stop()` lets it settle before it closes the connection, so a
   * claim that committed is not cut from its answer.
   */
  run<T>(statement: (client: PgQueryable) => Promise<T>): Promise<T> | undefined {
    const connection = this.#connection;
    if (connection === undefined || this.#stopped) return undefined;
    const sent = statement(connection.client);
    const settled: Promise<unknown> = sent.then(
      () => this.#running.delete(settled),
      () => this.#running.delete(settled),
    );
    this.#running.add(settled);
    return sent;
  }

  /** Connects and LISTENs; a failure is reported and retried in the background. */
  async start(): Promise<void> {
    this.#stopped = false;
    await (this.#connecting ??= this.#connect());
  }

  /**
   * Stops listening: a connection attempt is cut at once (it would answer nobody), an open
   * connection is closed once what {@link run} sent on it has settled, and cut if the server has
   * not answered both within `graceMs`.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    this.#cutOpening?.();
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection === undefined) return;
    const until = performance.now() + graceMs;
    await settlesBy(Promise.all(this.#running), until);
    await connection.close(Math.max(0, until - performance.now()));
  }

  async #connect(): Promise<void> {
    let connection: ListenConnection | undefined;
    try {
      connection = await this.#open((cut) => (this.#cutOpening = cut));
      const opened = connection;
      opened.client.on('error', (error) => this.#lost(opened, error));
      opened.client.on('notification', (message) => this.#notified(message?.payload));
      // the channel is built from validated identifiers; LISTEN takes no parameters, so this goes
      // as one simple query, the settings with it
      await execute(opened.client, sql`LISTEN ${sql.id(this.#channel)}; ${CLAIM_CONNECTION_SETTINGS}`);
      if (this.#stopped) {
        await opened.close(0);
        return;
      }
      this.#connection = opened;
      this.#failures = 0;
      this.#onNotify(); // anything inserted while we were not listening
    } catch (error) {
      await connection?.close(0);
      if (this.#stopped) return; // cut by stop(): nothing went wrong
      this.#onError(toError(error));
      this.#scheduleReconnect();
    } finally {
      this.#cutOpening = undefined;
      this.#connecting = undefined;
    }
  }

  /**
   * Sends a notification with `send` (through the pool) and waits up to `timeoutMs` for it to
   * arrive on the LISTEN connection: false when it does not (the connection is down, goes through
   * a pooler in transaction mode, or reaches another database). It goes on a channel of its own,
   * `<channel>:probe`, listened to only meanwhile, so other listeners of the channel never see it.
   */
  async probe(send: (channel: string, payload: string) => Promise<unknown>, timeoutMs: number): Promise<boolean> {
    const connection = this.#connection;
    if (connection === undefined) return false;
    const channel = `${this.#channel}:probe`;
    const payload = `leasehold:probe:${randomUUID()}`;
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<boolean>((resolve) => {
      this.#probes.set(payload, () => resolve(true));
      timer = setTimeout(resolve, timeoutMs, false);
    });
    try {
      // the channel is built from validated identifiers; LISTEN takes no parameters
      await execute(connection.client, sql`LISTEN ${sql.id(channel)}`);
      await send(channel, payload);
      return await arrived;
    } finally {
      clearTimeout(timer);
      this.#probes.delete(payload);
      if (this.#connection === connection) await execute(connection.client, sql`UNLISTEN ${sql.id(channel)}`).catch(() => undefined);
    }
  }

  #notified(payload: string | undefined): void {
    const probe = this.#probes.size > 0 && payload !== undefined ? this.#probes.get(payload) : undefined;
    if (probe !== undefined) return probe();
    this.#onNotify(payload);
  }

  #lost(connection: ListenConnection, error: Error): void {
    if (this.#connection !== connection) return;
    this.#connection = undefined;
    void connection.close(0);
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

async function openOwnClient(pool: PgPoolFactory<OwnClient>, track: (cut: () => void) => void, direct: string | undefined): Promise<ListenConnection> {
  // the connection string's fields (host, port, user, database…) override the pool's
  const client = new pool.Client(direct === undefined ? pool.options : { ...pool.options, connectionString: direct });
  // pg does not end a connection attempt the server does not answer; destroying its socket does
  const cut = () => client.connection?.stream?.destroy?.();
  // errors before the listener's own handler is attached (a failed connect) reject connect()
  client.on('error', () => undefined);
  track(cut);
  await client.connect();
  let closing: Promise<void> | undefined;
  return {
    client,
    close: (graceMs) => (closing ??= closeOwnClient(client, cut, graceMs)),
  };
}

async function closeOwnClient(client: OwnClient, cut: () => void, graceMs: number): Promise<void> {
  client.removeAllListeners('notification');
  let timer: NodeJS.Timeout | undefined;
  const ended = client.end().then(
    () => true,
    () => true,
  );
  const closed = await Promise.race([ended, new Promise<false>((resolve) => (timer = setTimeout(resolve, graceMs, false)))]);
  clearTimeout(timer);
  if (!closed) cut();
}

async function borrow(pool: PgPoolLike): Promise<ListenConnection> {
  const client = (await pool.connect()) as unknown as NotifyingClient & { release(err?: Error | boolean): void };
  let released = false;
  return {
    client,
    close: async () => {
      if (released) return;
      released = true;
      client.removeAllListeners('notification');
      client.release(true); // destroyed, not pooled: it is still LISTENing and carries our handlers
    },
  };
}
