import { ShutdownError } from '../errors.js';
import type { PgQueryable } from '../sql/execute.js';
import type { PgPoolLike } from '../sql/transaction.js';
import { CheckoutWatch, type Checkout, type CheckoutWatchOptions, type PoolCounts } from './checkout-watch.js';

type QueryResult = Awaited<ReturnType<PgQueryable['query']>>;
type PooledClient = Awaited<ReturnType<PgPoolLike['connect']>>;

/** The part of a pg `Connection` the pool touches: its socket, to cut it or to batch its writes. */
interface CuttableConnection {
  readonly stream?: { destroy?(): void; cork?(): void; uncork?(): void };
}

/** A pg `Query`: the client hands it the connection it runs on, then calls back. */
interface SubmittableQuery {
  submit(connection: CuttableConnection): Error | null | undefined | void;
}
type QueryClass = new (config: unknown, values?: unknown[]) => SubmittableQuery;

/** What a pg pool offers beyond {@link PgPoolLike}, where it offers it. */
interface PgPoolExtras {
  readonly Client?: { readonly Query?: QueryClass };
  readonly totalCount?: number;
  readonly idleCount?: number;
  readonly waitingCount?: number;
  readonly options?: { readonly max?: number };
  on?(event: 'release', listener: (error: unknown, client: PooledClient) => void): unknown;
  off?(event: 'release', listener: (error: unknown, client: PooledClient) => void): unknown;
}

interface InFlightQuery {
  /** Set once a pool client submitted it: the connection it now waits on. */
  connection: CuttableConnection | undefined;
  readonly cancel: (error: Error) => void;
  /** Its wait for a pool connection, until a client submitted it. */
  readonly checkout: Checkout;
}

/**
 * The worker's view of the application's pool. Statements still go through `pool.query` and
 * `pool.connect` (so the pool's limits, hooks and instrumentation apply), but the worker knows
 * which of them are waiting on the database, so that a stop whose deadline has passed can
 * {@link TrackedPool.abandon abandon} them: each statement the server never answered has its
 * connection cut (pg then fails the statement and the pool discards the client), and every wait
 * for a pooled connection ends at once. Without that, a stop during a database freeze would
 * either wait forever or return while pool clients stay checked out and keep the process alive.
 *
 * A single statement is handed to `pool.query` as a pg `Query` of the pool's own pg (so the
 * versions match), which tells us the connection it runs on. A pool without `Client.Query` (not
 * a pg pool) gets the statement as it is, and such statements cannot be cut.
 *
 * It also watches how long each statement waits for a pool connection (see {@link CheckoutWatch}):
 * one that waits longer than the bound given by the worker is reported, not left to wait in
 * silence.
 * @internal
 */
export class TrackedPool implements PgPoolLike {
  readonly #pool: PgPoolLike & PgPoolExtras;
  readonly #Query: QueryClass | undefined;
  readonly #queries = new Set<InFlightQuery>();
  /** Waits for a pooled client through {@link connect}: how to end each, and its checkout. */
  readonly #waiting = new Map<(error: Error) => void, Checkout>();
  readonly #watch: CheckoutWatch;
  /** Clients checked out through {@link connect} and not yet released. */
  readonly #held = new Set<PooledClient>();
  readonly #onRelease = (_error: unknown, client: PooledClient) => void this.#held.delete(client);
  #abandoned = false;

  constructor(pool: PgPoolLike, watch: Omit<CheckoutWatchOptions, 'counts'>) {
    this.#pool = pool;
    const Query = (pool as PgPoolExtras).Client?.Query;
    this.#Query = typeof Query === 'function' ? Query : undefined;
    this.#watch = new CheckoutWatch({ ...watch, counts: () => poolCounts(this.#pool) });
  }

  /** True once {@link abandon} ran: every later statement fails at once. */
  get abandoned(): boolean {
    return this.#abandoned;
  }

  /** Starts following releases (before the first checkout). */
  open(): void {
    this.#abandoned = false;
    this.#pool.on?.('release', this.#onRelease);
    this.#watch.start();
  }

  /** Stops following releases (after the last release, or after abandoning). */
  close(): void {
    this.#pool.off?.('release', this.#onRelease);
    this.#held.clear();
    this.#watch.stop();
  }

  async query(text: string, values?: unknown[]): Promise<QueryResult> {
    if (this.#abandoned) throw new ShutdownError();
    if (!this.#Query) return this.#pool.query(text, values);
    const query = new this.#Query(text, values);
    return new Promise<QueryResult>((resolve, reject) => {
      const entry: InFlightQuery = { connection: undefined, cancel: reject, checkout: this.#watch.begin() };
      const submit = query.submit.bind(query);
      query.submit = (connection) => {
        this.#watch.end(entry.checkout);
        // abandoned while it waited for a pooled client: it must not reach the server now
        if (!this.#queries.has(entry)) return new ShutdownError();
        entry.connection = connection;
        // pg writes a statement's five protocol messages one by one: the first goes out alone and
        // wakes the server for a partial message, the rest follow in a second write. Corked, they
        // leave in one write (a syscall and a server wake-up saved per statement).
        const stream = connection.stream;
        stream?.cork?.();
        try {
          return submit(connection);
        } finally {
          stream?.uncork?.();
        }
      };
      this.#queries.add(entry);
      // pg-pool hands a submittable to the client as it is; `text` is what it accepts here
      this.#pool.query(query as unknown as string).then(
        (result) => {
          this.#queries.delete(entry);
          resolve(result);
        },
        (error: unknown) => {
          this.#watch.end(entry.checkout);
          this.#queries.delete(entry);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  async connect(): Promise<PooledClient> {
    if (this.#abandoned) throw new ShutdownError();
    return new Promise<PooledClient>((resolve, reject) => {
      this.#waiting.set(reject, this.#watch.begin());
      this.#pool.connect().then(
        (client) => {
          if (!this.#endWait(reject)) {
            client.release(); // given up on meanwhile: straight back to the pool
            return;
          }
          // only a pool that reports releases lets us know when it is ours no more
          if (this.#pool.on) this.#held.add(client);
          resolve(client);
        },
        (error: unknown) => {
          this.#endWait(reject);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /** Ends a wait of {@link connect}; false when it was given up on meanwhile. */
  #endWait(reject: (error: Error) => void): boolean {
    const checkout = this.#waiting.get(reject);
    if (checkout === undefined) return false;
    this.#watch.end(checkout);
    this.#waiting.delete(reject);
    return true;
  }

  /**
   * Gives up on everything still waiting for the database: cuts the connection of each statement
   * in flight and of each checked-out client (pg fails what runs on it, the pool discards it),
   * ends every wait for a pooled connection with `ShutdownError`, and refuses new statements.
   * Returns how many connections it cut.
   */
  abandon(): number {
    this.#abandoned = true;
    const shutdown = new ShutdownError();
    for (const reject of this.#waiting.keys()) reject(shutdown);
    this.#waiting.clear();
    let cut = 0;
    for (const entry of this.#queries) {
      if (entry.connection) cut += cutConnection(entry.connection);
      entry.cancel(shutdown);
    }
    this.#queries.clear();
    for (const client of this.#held) {
      // a cut connection makes the client emit 'error'; its holder may be between listeners
      (client as { on?(event: 'error', listener: () => void): unknown }).on?.('error', () => undefined);
      const connection = (client as { connection?: CuttableConnection }).connection;
      if (connection) cut += cutConnection(connection);
    }
    this.#held.clear();
    return cut;
  }
}

function poolCounts(pool: PgPoolExtras): PoolCounts | undefined {
  const { totalCount: total, idleCount: idle, waitingCount: waiting } = pool;
  if (typeof total !== 'number' || typeof idle !== 'number' || typeof waiting !== 'number') return undefined;
  return { max: pool.options?.max, total, idle, waiting };
}

// pg offers no public way to abort a statement the server does not answer; pg-pool's own
// connection timeout does exactly this, and pg's Client.end() does it for an active query.
function cutConnection(connection: CuttableConnection): number {
  if (typeof connection.stream?.destroy !== 'function') return 0;
  connection.stream.destroy();
  return 1;
}
