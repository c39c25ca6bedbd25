import { ConfigError } from '../errors.js';
import { isUnprepared, noPreparedStatements } from '../sql/execute.js';
import { isPgPool, type PgPoolLike } from '../sql/transaction.js';

/** Where a worker's pool sits: directly on PostgreSQL, or behind a pooler in transaction mode. */
export interface PoolerOptions {
  /**
   * Wait for notifications on a dedicated connection. Behind a pooler in transaction mode
   * (`noPreparedStatements`) it needs `listenConnectionString`: `true` without it is a
   * `ConfigError`. @defaultValue true; with `noPreparedStatements` and no
   * `listenConnectionString`, false (the worker polls every `pollInterval`)
   */
  listen?: boolean;
  /**
   * The pool reaches PostgreSQL through a pooler in transaction mode (PgBouncer, Supavisor, RDS
   * Proxy …): send no named prepared statements through it (this calls `noPreparedStatements()`
   * on the pool), and LISTEN only on `listenConnectionString` (docs/operations.md, "Poolers").
   * @defaultValue false, unless the pool was marked with `noPreparedStatements()`
   */
  noPreparedStatements?: boolean;
  /**
   * A connection string that reaches PostgreSQL directly (not through the pooler), for the LISTEN
   * connection; the pool's other settings (`ssl`, …) apply to it too, its own fields (host, port,
   * user, database …) override the pool's. Behind a pooler, `start()` sends a notification
   * through the pool and refuses to start when it does not arrive on this connection within 3 s.
   * @defaultValue the pool's own settings
   */
  listenConnectionString?: string;
}

/** {@link PoolerOptions} checked. @internal */
export interface PoolerSettings {
  readonly listen: boolean;
  /** Behind a pooler in transaction mode: no named statements, LISTEN only on a direct connection. */
  readonly pooled: boolean;
  readonly listenConnectionString: string | undefined;
}

/**
 * Checks the pooler options, and marks the pool (see `noPreparedStatements()`) when asked to.
 * LISTEN through a pooler in transaction mode runs on whichever server connection is free and
 * never delivers, so asking for it is refused here rather than left to fail silently.
 * @internal
 */
export function poolerSettings(options: PoolerOptions & { readonly pool: PgPoolLike }): PoolerSettings {
  const { listen, listenConnectionString: direct } = options;
  if (options.noPreparedStatements !== undefined && typeof options.noPreparedStatements !== 'boolean') {
    throw new ConfigError('noPreparedStatements', 'Expected `noPreparedStatements` to be true or false');
  }
  if (listen !== undefined && typeof listen !== 'boolean') throw new ConfigError('listen', 'Expected `listen` to be true or false');
  if (direct !== undefined) {
    if (typeof direct !== 'string' || direct.length === 0) {
      throw new ConfigError('listenConnectionString', 'Expected `listenConnectionString` to be a connection string such as postgres://app@db-host:5432/app');
    }
    if (listen === false) {
      throw new ConfigError('listenConnectionString', 'Given with `listen: false`: leave `listen` out to LISTEN on this connection, or leave `listenConnectionString` out to poll');
    }
    if (!isPgPool(options.pool)) throw new ConfigError('listenConnectionString', 'Needs a pg Pool as `pool`: its Client class opens the LISTEN connection');
  }
  if (options.noPreparedStatements === true) noPreparedStatements(options.pool);
  const pooled = isUnprepared(options.pool);
  if (pooled && listen === true && direct === undefined) {
    throw new ConfigError(
      'listen',
      'LISTEN through a pooler in transaction mode (`noPreparedStatements`) never delivers: give `listenConnectionString` (a direct connection to PostgreSQL), or leave `listen` out to poll every `pollInterval`',
    );
  }
  return Object.freeze({ listen: listen ?? (!pooled || direct !== undefined), pooled, listenConnectionString: direct });
}
