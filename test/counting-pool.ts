// A pool that records every query text its clients send: one entry per round trip.
import pg from 'pg';

/**
 * A `pg` pool on `url` whose clients record each statement's text in `sent`, in order. Recorded
 * by the pool's client class, not its `connect` event: a worker opens its LISTEN connection from
 * the pool's `Client` and options, and sends its claims, wake arms and renewals there. A statement
 * for which `refuse` returns an error fails with it, unsent, as a dropped connection fails it.
 */
export function countingPool(url: string, options: pg.PoolConfig = {}, refuse: (text: string) => Error | undefined = () => undefined): { pool: pg.Pool; sent: string[] } {
  const sent: string[] = [];
  class Client extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      const query = this.query.bind(this) as (...args: unknown[]) => unknown;
      (this as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const first = args[0];
        const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
        const refused = refuse(text);
        if (refused !== undefined) return Promise.reject(refused);
        sent.push(text);
        return query(...args);
      };
    }
  }
  const pool = new pg.Pool({ connectionString: url, max: 10, ...options, Client });
  return { pool, sent };
}
