// A pool that records every query text its clients send: one entry per round trip.
import pg from 'pg';

/** A `pg` pool on `url` whose clients record each statement's text in `sent`, in order. */
export function countingPool(url: string, options: pg.PoolConfig = {}): { pool: pg.Pool; sent: string[] } {
  const sent: string[] = [];
  const pool = new pg.Pool({ connectionString: url, max: 10, ...options });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      sent.push(typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? ''));
      return query(...args);
    };
  });
  return { pool, sent };
}
