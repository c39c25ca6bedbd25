import { describe, expect, it } from 'vitest';
import { inTransaction } from './transaction.js';

/** A fake pg client that records the statements it is sent. */
function fakeClient(status: string | null, extra: object = {}) {
  const sent: string[] = [];
  return {
    sent,
    client: {
      ...extra,
      getTransactionStatus: () => status,
      query: async (text: string) => {
        sent.push(text);
        return { rows: [], rowCount: 0 };
      },
    },
  };
}

describe('inTransaction on a pg client', () => {
  it('opens and commits its own transaction on an idle client', async () => {
    const { sent, client } = fakeClient('I');
    await inTransaction(client, async (trx) => void (await (trx as typeof client).query('work')));
    expect(sent).toEqual(['BEGIN', 'work', 'COMMIT']);
  });

  it('rolls its own transaction back when the work throws, and rethrows', async () => {
    const { sent, client } = fakeClient('I');
    await expect(inTransaction(client, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(sent).toEqual(['BEGIN', 'ROLLBACK']);
  });

  it('joins the caller\'s open transaction', async () => {
    const { sent, client } = fakeClient('T');
    await inTransaction(client, async (trx) => void (await (trx as typeof client).query('work')));
    expect(sent).toEqual(['work']);
  });

  it('refuses a client whose transaction status is unknown, or an unknown executor', async () => {
    await expect(inTransaction(fakeClient(null).client, async () => undefined)).rejects.toMatchObject({ code: 'CONFIG', option: 'executor' });
    const old = { connectionParameters: {}, connect: async () => undefined, query: async () => ({ rows: [], rowCount: 0 }) };
    await expect(inTransaction(old, async () => undefined)).rejects.toThrow(/8\.21/);
    await expect(inTransaction({ query: async () => ({ rows: [], rowCount: 0 }) }, async () => undefined)).rejects.toMatchObject({ code: 'CONFIG' });
  });

  it('says what needs the transaction when it refuses', async () => {
    await expect(inTransaction(fakeClient(null).client, async () => undefined, 'ordered adds lock until commit'))
      .rejects.toThrow(/\(ordered adds lock until commit\)$/);
  });
});

describe('inTransaction on Kysely', () => {
  it('joins a transaction, and opens one on an instance', async () => {
    const opened: string[] = [];
    const trx = { isTransaction: true, getExecutor: () => undefined };
    const db = {
      isTransaction: false,
      getExecutor: () => undefined,
      transaction: () => ({ execute: async <R>(cb: (t: typeof trx) => Promise<R>) => (opened.push('trx'), cb(trx)) }),
    };
    expect(await inTransaction(trx as never, async (t) => t)).toBe(trx);
    expect(opened).toEqual([]);
    expect(await inTransaction(db as never, async (t) => t)).toBe(trx);
    expect(opened).toEqual(['trx']);
  });
});
