import { RetryableError } from '@leasehold/core';
import { toError, withTimeout } from '@leasehold/core/internal';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';

/** One connection and its JetStream clients, as the publishes share them. @internal */
export interface NatsLink {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  /** The manager, made on first use (only a "no responders" needs it). */
  manager(timeoutMs: number): Promise<JetStreamManager>;
}

/** How {@link NatsConnectionHolder} gets its connection. @internal */
export interface NatsConnectionSource {
  readonly servers: readonly string[] | undefined;
  readonly connectOptions: Omit<NodeConnectionOptions, 'servers'>;
  readonly connection: NatsConnection | undefined;
  readonly connectTimeoutMs: number;
}

/**
 * The publisher's one connection: the caller's, or one it opens on first use and shares
 * between all publishes. An owned connection reconnects by itself (the client's own loop);
 * when it closes for good it is dropped and the next publish opens another. @internal
 */
export class NatsConnectionHolder {
  readonly #source: NatsConnectionSource;
  #link: Promise<NatsLink> | undefined;
  #closed = false;

  constructor(source: NatsConnectionSource) {
    this.#source = source;
  }

  /** The shared link; a failed connect is a `RetryableError`, and the next call tries again. */
  get(): Promise<NatsLink> {
    if (this.#closed) return Promise.reject(new RetryableError('NATS publisher is closed'));
    this.#link ??= this.#open().catch((error: unknown) => {
      this.#link = undefined;
      throw error;
    });
    return this.#link;
  }

  /** Closes an owned connection (drained first, within `timeoutMs`); idempotent. */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    const link = this.#link;
    this.#link = undefined;
    if (!link || this.#source.connection) return;
    const nc = await link.then((l) => l.nc).catch(() => undefined);
    if (!nc || nc.isClosed()) return;
    await withTimeout(nc.drain(), timeoutMs, () => new Error('drain timed out')).catch(() => nc.close());
  }

  async #open(): Promise<NatsLink> {
    const given = this.#source.connection;
    const nc = given ?? (await this.#connect());
    if (!given) {
      // closed for good (not a reconnect): the next publish opens a new connection
      void nc.closed().then(() => {
        if (this.#link && !this.#closed) this.#link = undefined;
      });
    }
    let manager: Promise<JetStreamManager> | undefined;
    return {
      nc,
      js: jetstream(nc),
      manager: (timeoutMs) => {
        manager ??= jetstreamManager(nc, { timeout: timeoutMs, checkAPI: false }).catch((error: unknown) => {
          manager = undefined;
          throw error;
        });
        return manager;
      },
    };
  }

  async #connect(): Promise<NatsConnection> {
    const { servers, connectOptions, connectTimeoutMs } = this.#source;
    const what = `cannot connect to NATS at ${servers!.join(', ')}`;
    let late = false;
    try {
      const connecting = connect({
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        name: 'leasehold-adapters-nats',
        ...connectOptions,
        servers: [...servers!],
        timeout: connectTimeoutMs,
        waitOnFirstConnect: false,
      });
      // a late connection after the timeout is closed, not leaked
      connecting.then((nc) => (late ? nc.close() : undefined)).catch(() => undefined);
      return await withTimeout(connecting, connectTimeoutMs + 100, () => {
        late = true;
        return new Error(`no connection within ${connectTimeoutMs} ms`);
      });
    } catch (error) {
      throw new RetryableError(`${what}: ${toError(error).message}`, { cause: error });
    }
  }
}
