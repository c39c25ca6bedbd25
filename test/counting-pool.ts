// A pool that records every query text its clients send: one entry per round trip.
import pg from 'pg';

/**
 * A `pg` pool on `url` whose clients record each statement's text in `sent`, in order. Recorded
 * by the pool's client class, not its `connect` event: a worker opens its LISTEN connection from
 * the pool's `Client` and options, and sends its claims, wake arms and renewals there. A statement
 * for which `refuse` returns an error fails with it, unsent, as a dropped connection fails it; one
 * for which `lose` returns an error is sent and runs, and then fails with it, its answer lost.
 */
export function countingPool(
  url: string,
  options: pg.PoolConfig = {},
  refuse: (text: string) => Error | undefined = () => undefined,
  lose: (text: string) => Error | undefined = () => undefined,
): { pool: pg.Pool; sent: string[] } {
  const sent: string[] = [];
  class Client extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      const query = this.query.bind(this) as (...args: unknown[]) => unknown;
      (this as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const first = args[0];
        const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
        // a pool's own query passes a callback; a client's caller may await a promise instead
        const callback = typeof args.at(-1) === 'function' ? (args.at(-1) as (error: Error) => void) : undefined;
        const refused = refuse(text);
        if (refused !== undefined) {
          if (callback === undefined) return Promise.reject(refused);
          queueMicrotask(() => callback(refused));
          return undefined;
        }
        sent.push(text);
        const lost = lose(text);
        if (lost === undefined) return query(...args);
        if (callback === undefined) return (query(...args) as Promise<unknown>).then(() => Promise.reject(lost));
        return query(...args.slice(0, -1), () => callback(lost));
      };
    }
  }
  const pool = new pg.Pool({ connectionString: url, max: 10, ...options, Client });
  return { pool, sent };
}
