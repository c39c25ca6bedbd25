// The receiving side's inbox: a message id applied once, however many copies arrive, and when.
import { sql, type Kysely } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { isLeaseholdError, type PgQueryable } from '@leasehold/core';
import { createInbox, migrateInbox } from '@leasehold/adapters-http';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const inbox = createInbox();
let nextId = 0;
const freshId = () => `msg_${++nextId}`;

beforeAll(async () => {
  await sql`CREATE TABLE effect (message_id text NOT NULL, applied_by int NOT NULL)`.execute(t.db);
});

async function effects(messageId: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM effect WHERE message_id = ${messageId}`.execute(t.db);
  return Number(rows[0]!.n);
}

/**
 * Holds the first (inserting) transaction open until `blocked` other sessions wait on a lock,
 * i.e. until every duplicate has reached its INSERT: the race is certain, not hoped for.
 */
async function untilBlocked(blocked: number, deadlineMs = 15_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(t.db);
    if (Number(rows[0]!.n) >= blocked) return;
    if (Date.now() - started > deadlineMs) throw new Error(`only ${rows[0]!.n} of ${blocked} sessions blocked`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('concurrent duplicate deliveries', () => {
  it('apply once through Kysely, each copy in its own transaction', async () => {
    const id = freshId();
    const copies = 8;
    const results = await Promise.all(
      Array.from({ length: copies }, (_, copy) =>
        inbox.receive(t.db, id, async (trx: Kysely<object>) => {
          await untilBlocked(copies - 1);
          await sql`INSERT INTO effect VALUES (${id}, ${copy})`.execute(trx);
          return copy;
        }),
      ),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    expect(await effects(id)).toBe(1);
  });

  it('apply once through a pg Pool', async () => {
    const id = freshId();
    const copies = 5;
    const results = await Promise.all(
      Array.from({ length: copies }, (_, copy) =>
        inbox.receive(t.pool, id, async (client: PgQueryable) => {
          await untilBlocked(copies - 1);
          await client.query('INSERT INTO effect VALUES ($1, $2)', [id, copy]);
        }),
      ),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    expect(await effects(id)).toBe(1);
  });

  it('a copy that waits on a failed first one applies it instead', async () => {
    const id = freshId();
    let attempts = 0;
    const results = await Promise.allSettled(
      [0, 1].map((copy) =>
        inbox.receive(t.db, id, async (trx: Kysely<object>) => {
          attempts++;
          if (attempts === 1) {
            await untilBlocked(1);
            throw new Error('receiver failed mid-apply');
          }
          await sql`INSERT INTO effect VALUES (${id}, ${copy})`.execute(trx);
        }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(attempts).toBe(2);
    expect(await effects(id)).toBe(1);
  });
});

describe("inside the receiver's own transaction", () => {
  it('joins a Kysely transaction; its rollback undoes the record too', async () => {
    const id = freshId();
    await expect(
      t.db.transaction().execute(async (trx) => {
        const first = await inbox.receive(trx, id, async (tx) => {
          await sql`INSERT INTO effect VALUES (${id}, 1)`.execute(tx);
          return 'done';
        });
        expect(first).toEqual({ applied: true, result: 'done' });
        throw new Error('something later in the same transaction failed');
      }),
    ).rejects.toThrow(/later/);
    expect(await effects(id)).toBe(0);

    const redelivered = await t.db.transaction().execute((trx) => inbox.receive(trx, id, async () => 'again'));
    expect(redelivered).toEqual({ applied: true, result: 'again' });
    const duplicate = await t.db.transaction().execute((trx) => inbox.receive(trx, id, async () => 'never'));
    expect(duplicate).toEqual({ applied: false });
  });

  it('joins a pg client transaction', async () => {
    const id = freshId();
    const client = await t.client();
    const deliver = async () => {
      await client.query('BEGIN');
      const result = await inbox.receive(client, id, async (c) => {
        await c.query('INSERT INTO effect VALUES ($1, 1)', [id]);
      });
      await client.query('COMMIT');
      return result.applied;
    };
    expect([await deliver(), await deliver(), await deliver()]).toEqual([true, false, false]);
    expect(await effects(id)).toBe(1);
  });

  it('opens its own transaction on a pg client that is not in one', async () => {
    const id = freshId();
    const client = await t.client();
    expect(client.getTransactionStatus()).toBe('I');
    await expect(inbox.receive(client, id, async (c) => {
      await c.query('INSERT INTO effect VALUES ($1, 1)', [id]);
      throw new Error('apply failed after its write');
    })).rejects.toThrow('apply failed');
    // record and effect rolled back together: the redelivery applies
    expect(await effects(id)).toBe(0);
    expect((await inbox.receive(client, id, async (c) => c.query('INSERT INTO effect VALUES ($1, 2)', [id]))).applied).toBe(true);
    expect(client.getTransactionStatus()).toBe('I');
    expect(await effects(id)).toBe(1);
  });

  it('refuses an executor whose transaction state it cannot tell', async () => {
    const opaque = { query: t.pool.query.bind(t.pool) };
    const error = await inbox.receive(opaque, freshId(), async () => undefined).catch((e: unknown) => e);
    expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
  });

  it('rolls back the record when apply throws in a transaction receive opened', async () => {
    const id = freshId();
    await expect(inbox.receive(t.pool, id, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const again = await inbox.receive(t.pool, id, async (c) => {
      await c.query('INSERT INTO effect VALUES ($1, 2)', [id]);
    });
    expect(again.applied).toBe(true);
    expect(await effects(id)).toBe(1);
  });
});

describe('many messages, each delivered three times at once', () => {
  it('applies each exactly once and counts the duplicates', async () => {
    const ids = Array.from({ length: 20 }, freshId);
    const deliveries = ids.flatMap((id) => [id, id, id]).sort(() => Math.random() - 0.5);
    const results = await Promise.all(
      deliveries.map((id) =>
        inbox.receive(t.db, id, async (trx: Kysely<object>) => {
          await sql`INSERT INTO effect VALUES (${id}, 0)`.execute(trx);
        }),
      ),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(ids.length);
    expect(results.filter((r) => !r.applied)).toHaveLength(2 * ids.length);
    for (const id of ids) expect(await effects(id)).toBe(1);
  });
});

describe('retention and setup', () => {
  it('prune deletes records older than asked (database time)', async () => {
    const [old, recent] = [freshId(), freshId()];
    await inbox.receive(t.db, old, async () => undefined);
    await inbox.receive(t.db, recent, async () => undefined);
    await sql`UPDATE leasehold.inbox SET received_at = now() - interval '2 days' WHERE message_id = ${old}`.execute(t.db);
    expect(await inbox.prune(t.db, { olderThan: '1d' })).toBe(1);
    expect((await inbox.receive(t.db, old, async () => undefined)).applied).toBe(true);
    expect((await inbox.receive(t.db, recent, async () => undefined)).applied).toBe(false);
  });

  it('migrates its own line into any schema, idempotently', async () => {
    expect((await migrateInbox(t.pool, { schema: 'receiver' })).applied).toEqual(['inbox:1']);
    expect((await migrateInbox(t.db, { schema: 'receiver' })).applied).toEqual([]);
    const other = createInbox({ schema: 'receiver' });
    expect((await other.receive(t.pool, 'x', async () => 1)).applied).toBe(true);
    expect((await other.receive(t.pool, 'x', async () => 1)).applied).toBe(false);
  });

  it('refuses a bad schema or message id before any SQL', async () => {
    expect(() => createInbox({ schema: 'Robert"; DROP TABLE x' })).toThrow(/schema/);
    for (const id of ['', 'x'.repeat(1025), undefined as unknown as string]) {
      const error = await inbox.receive(t.pool, id, async () => undefined).catch((e: unknown) => e);
      expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
    }
  });
});
