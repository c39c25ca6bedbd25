import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { execute, isUnprepared, noPreparedStatements } from '../sql/execute.js';
import { poolerSettings } from './pooler-settings.js';

/** What a statement reached the driver as: a text, or a config object with a name. */
type Sent = { readonly named: string | undefined };

/** A fake pg Pool (it has `Client` and `options`) that records how statements reach it. */
function fakePool() {
  const sent: Sent[] = [];
  const query = async (config: string | { name?: string }) => {
    sent.push({ named: typeof config === 'string' ? undefined : config.name });
    return { rows: [], rowCount: 0 };
  };
  const client = Object.assign(new EventEmitter(), { query, release: () => undefined });
  const pool = Object.assign(new EventEmitter(), {
    Client: class {},
    options: {},
    query,
    connect: async () => {
      pool.emit('acquire', client); // as pg-pool does before it hands a client out
      return client;
    },
  });
  return { pool, sent };
}

const statement = sql`SELECT ${1}::int`;

describe('noPreparedStatements()', () => {
  it('a marked pool, and every client it hands out afterwards, gets unnamed statements; an unmarked one named ones', async () => {
    const plain = fakePool();
    await execute(plain.pool, statement);
    expect(plain.sent).toEqual([{ named: expect.stringMatching(/^leasehold_/) }]);

    const marked = fakePool();
    expect(noPreparedStatements(marked.pool)).toBe(marked.pool);
    await execute(marked.pool, statement);
    await execute(await marked.pool.connect(), statement);
    expect(marked.sent).toEqual([{ named: undefined }, { named: undefined }]);
    expect(isUnprepared(marked.pool)).toBe(true);
    expect(isUnprepared(plain.pool)).toBe(false);
  });

  it('refuses what is not an object', () => {
    expect(() => noPreparedStatements(null as unknown as object)).toThrow(ConfigError);
  });
});

describe('poolerSettings', () => {
  const option = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      if (error instanceof ConfigError) return error.option;
      throw error;
    }
    return undefined;
  };

  it('listens by default without a pooler; behind one, only with a direct connection', () => {
    expect(poolerSettings({ pool: fakePool().pool })).toEqual({ listen: true, pooled: false, listenConnectionString: undefined });
    expect(poolerSettings({ pool: fakePool().pool, noPreparedStatements: true })).toEqual({ listen: false, pooled: true, listenConnectionString: undefined });
    const direct = 'postgres://app@db:5432/app';
    expect(poolerSettings({ pool: fakePool().pool, noPreparedStatements: true, listenConnectionString: direct })).toEqual({ listen: true, pooled: true, listenConnectionString: direct });
    // a pool marked by hand counts as behind a pooler too
    expect(poolerSettings({ pool: noPreparedStatements(fakePool().pool) }).pooled).toBe(true);
  });

  it('refuses, naming the option: LISTEN through the pooler, a direct connection with listen: false, a bad value', () => {
    const pool = fakePool().pool;
    expect(option(() => poolerSettings({ pool, noPreparedStatements: true, listen: true }))).toBe('listen');
    expect(option(() => poolerSettings({ pool, listen: false, listenConnectionString: 'postgres://db/app' }))).toBe('listenConnectionString');
    expect(option(() => poolerSettings({ pool, listenConnectionString: '' }))).toBe('listenConnectionString');
    expect(option(() => poolerSettings({ pool: { query: pool.query, connect: pool.connect }, listenConnectionString: 'postgres://db/app' }))).toBe('listenConnectionString');
    expect(option(() => poolerSettings({ pool, noPreparedStatements: 'yes' as unknown as boolean }))).toBe('noPreparedStatements');
    expect(option(() => poolerSettings({ pool, listen: 1 as unknown as boolean }))).toBe('listen');
  });
});
