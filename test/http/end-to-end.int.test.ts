// outbox → dispatcher → httpPublisher → receiver (verifyWebhook + inbox), with a receiver that
// fails first attempts and loses responses, and one dispatcher that loses its lease while its
// request is in flight. Every event must be applied exactly once; the duplicates that reach the
// receiver are counted and absorbed by the inbox.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sql } from 'kysely';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PgPoolLike, PgQueryable } from '@leasehold/core';
import { createDispatcher, createOutbox, type Dispatcher } from '@leasehold/outbox';
import { createInbox, generateWebhookSecret, httpPublisher, verifyWebhook } from '@leasehold/adapters-http';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';
import { useTestServer } from './http-server.js';

const t = useTestDatabase();
const server = useTestServer();
const track = useWorkers();
const secret = generateWebhookSecret();
const inbox = createInbox();
const EVENTS = 24;

beforeAll(async () => {
  // deliberately not idempotent on its own: a second apply would add a second row
  await sql`CREATE TABLE ledger (message_id text NOT NULL, amount int NOT NULL, via text NOT NULL)`.execute(t.db);
});

/** A pool whose queries can be held, as if the network to the database went away for a while. */
function partitionablePool(pool: pg.Pool) {
  let healed: Promise<void> | null = null;
  let heal = () => {};
  let inFlight = 0;
  const gated = async <R>(run: () => Promise<R>): Promise<R> => {
    while (healed) await healed;
    inFlight++;
    try {
      return await run();
    } finally {
      inFlight--;
    }
  };
  const wrapped: PgPoolLike = {
    query: (text, values) => gated(() => pool.query(text, values)),
    connect: async () => {
      const client = await gated(() => pool.connect());
      return {
        query: (text: string, values?: unknown[]) => gated(() => client.query(text, values)),
        release: (err?: Error | boolean) => client.release(err),
      };
    },
  };
  return {
    pool: wrapped,
    partition: () => (healed = new Promise<void>((resolve) => (heal = resolve))),
    heal: () => {
      healed = null;
      heal();
    },
    idle: () => inFlight === 0,
  };
}

async function waitUntil(check: () => boolean | Promise<boolean>, what: string, deadlineMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > deadlineMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The receiver, with its fault injection and its counters. */
function receiver() {
  const deliveries = new Map<string, number>();
  const stats = { requests: 0, applied: 0, duplicates: 0, failedFirst: 0, responsesLost: 0, rejected: 0, errors: 0 };
  let held: { run: () => Promise<void>; id: string } | undefined;

  async function apply(req: IncomingMessage, res: ServerResponse, body: string, inject: boolean): Promise<void> {
    let id: string;
    try {
      id = verifyWebhook(req.headers, body, secret).id;
    } catch {
      stats.rejected++;
      res.writeHead(401).end();
      return;
    }
    const n = (deliveries.get(id) ?? 0) + 1;
    deliveries.set(id, n);
    if (inject && n === 1) {
      // every message fails its first delivery, before anything is applied
      stats.failedFirst++;
      res.writeHead(503, { 'retry-after': '0' }).end('warming up');
      return;
    }
    const event = JSON.parse(body) as { data: { amount: number } };
    const result = await inbox.receive(t.pool, id, async (client: PgQueryable) => {
      await client.query('INSERT INTO ledger VALUES ($1, $2, $3)', [id, event.data.amount, String(req.headers['x-dispatcher'])]);
    });
    if (result.applied) stats.applied++;
    else stats.duplicates++;
    if (inject && result.applied && Number(id) % 3 === 0) {
      // committed, but the response never arrives: the sender must retry, the inbox absorbs it
      stats.responsesLost++;
      req.socket.destroy();
      return;
    }
    res.writeHead(200).end(result.applied ? 'applied' : 'duplicate');
  }

  server.reset(async (req, res, body) => {
    stats.requests++;
    if (held === undefined && req.headers['x-dispatcher'] === 'A') {
      // the first request of dispatcher A stays in flight until the test lets it through
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      held = { id: String(req.headers['webhook-id']), run: async () => release() };
      await released;
      await apply(req, res, body, false).catch(() => stats.errors++);
      return;
    }
    await apply(req, res, body, true).catch((error: unknown) => {
      stats.errors++;
      throw error;
    });
  });

  return { stats, held: () => held };
}

function publisher(owner: 'A' | 'B') {
  return httpPublisher({ url: `${server.origin}/events`, signingSecrets: secret, headers: { 'x-dispatcher': owner }, timeout: '8s' });
}

// A delivers only the first event, and keeps its request in flight well past the steps below.
function dispatcherA(pool: PgPoolLike): Dispatcher {
  return track(
    createDispatcher({
      pool, owner: 'A', publisher: publisher('A'), eventTypes: ['credited.first'],
      concurrency: 1, lease: '30s', publishTimeout: '9s', heartbeatInterval: '100ms', pollInterval: '50ms', listen: false,
    }),
  );
}

// B delivers everything, with fast retries and a short lease. The short lease bounds a stall:
// core's heartbeat matches lost leases by task id only, so a tick that straddles a retry the
// same worker re-claims at once can abort the new claim as "lost"; the row then waits for its
// lease to run out before it is claimed again (reported to the lead; correctness is unaffected).
function dispatcherB(pool: PgPoolLike): Dispatcher {
  return track(
    createDispatcher({
      pool, owner: 'B', publisher: publisher('B'),
      concurrency: 3, lease: '2s', publishTimeout: '500ms', heartbeatInterval: '500ms', pollInterval: '50ms', listen: false,
      backoff: { base: '5ms', cap: '20ms' },
    }),
  );
}

describe('outbox → dispatcher → httpPublisher → verifyWebhook + inbox', () => {
  it('applies every event exactly once despite failures, lost responses and a lost lease', async () => {
    const outbox = createOutbox();
    const ids = await outbox.addMany(
      t.db,
      Array.from({ length: EVENTS }, (_, i) => ({
        aggregateType: 'account',
        aggregateId: `acct-${i % 5}`,
        eventType: i === 0 ? 'credited.first' : 'credited',
        payload: { amount: i + 1 },
      })),
    );
    const rx = receiver();
    const link = partitionablePool(t.pool);
    const a = dispatcherA(link.pool);
    const lostByA: string[] = [];
    a.on('task:lease-lost', ({ task }) => lostByA.push(task.id));
    await a.start();

    // A's first request is now in flight at the receiver; A loses the database
    await waitUntil(() => rx.held() !== undefined, 'a request from A in flight');
    const victim = rx.held()!.id;
    expect(victim).toBe(ids[0]);
    link.partition();
    await waitUntil(link.idle, "A's statements in flight to finish");
    // time passes for the database: A's lease on the message runs out
    await sql`UPDATE leasehold.outbox SET lease_until = now() - interval '1 second' WHERE id = ${victim}`.execute(t.db);

    // B takes the message over (lease_version + 1) and delivers it
    const b = dispatcherB(t.pool);
    let lostByB = 0;
    b.on('task:lease-lost', () => lostByB++);
    await b.start();
    await waitUntil(
      async () => (await sql`SELECT 1 FROM ledger WHERE message_id = ${victim}`.execute(t.db)).rows.length === 1,
      'B to deliver the taken-over message',
    );

    // A's database link comes back: its heartbeat finds the token moved on, aborting its request
    link.heal();
    await waitUntil(() => lostByA.includes(victim), 'A to learn it lost the lease');
    // and the request A had in flight finally reaches the receiver's logic: a duplicate
    await rx.held()!.run();

    await waitUntil(async () => {
      const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM leasehold.outbox WHERE status <> 'done'`.execute(t.db);
      return Number(rows[0]!.n) === 0;
    }, 'every message done').catch(async (error: unknown) => {
      const { rows } = await sql`SELECT id, status, attempts, lease_owner, lease_version FROM leasehold.outbox WHERE status <> 'done'`.execute(t.db);
      console.log('[e2e] not done:', rows, rx.stats);
      throw error;
    });
    const { stats } = rx;
    await waitUntil(() => stats.applied + stats.duplicates + stats.failedFirst + stats.rejected + stats.errors === stats.requests, 'the receiver to settle');
    await Promise.all([a.stop({ timeout: '5s' }), b.stop({ timeout: '5s' })]);

    const { rows } = await sql<{ message_id: string; n: string; amount: number }>`
      SELECT message_id, count(*) AS n, min(amount) AS amount FROM ledger GROUP BY message_id ORDER BY message_id::bigint`.execute(t.db);
    // exactly once: one ledger row per event, with its own payload
    expect(rows.map((r) => [r.message_id, Number(r.n), r.amount])).toEqual(ids.map((id, i) => [id, 1, i + 1]));
    expect(rx.stats.applied).toBe(EVENTS);
    expect(rx.stats.rejected).toBe(0);
    expect(rx.stats.errors).toBe(0);
    // every first delivery failed; every response lost came back as a duplicate, and so did A's late request
    expect(rx.stats.failedFirst).toBe(EVENTS);
    expect(rx.stats.duplicates).toBeGreaterThanOrEqual(rx.stats.responsesLost + 1);
    expect(rx.stats.responsesLost).toBeGreaterThan(0);
    expect(lostByA).toContain(victim);
    // the taken-over message was applied from B's request; A's copy was the duplicate
    const { rows: victimRows } = await sql<{ via: string }>`SELECT via FROM ledger WHERE message_id = ${victim}`.execute(t.db);
    expect(victimRows).toEqual([{ via: 'B' }]);
    console.log(`[e2e] ${EVENTS} events, ${rx.stats.requests} requests: ${rx.stats.failedFirst} failed first, ` +
      `${rx.stats.responsesLost} responses lost, ${rx.stats.duplicates} duplicates absorbed, 1 lease lost by A, ${lostByB} by B`);
  });
});
