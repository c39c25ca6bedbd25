// The shared shape of the broker scenarios: a producer's outbox with ordered and unordered events,
// a consumer service (its own schema: inbox + a ledger without a unique key), and the checks that
// every event was applied exactly once, none lost, and each ordered aggregate in order.
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { expect } from 'vitest';
import { createOutbox, type OutboxEvent } from '@leasehold/outbox';
import { createInbox, migrateInbox, type Inbox } from '@leasehold/adapters-http';
import { envInt } from '../faults/summary.js';

export { envInt };

/** The consumer service's schema: its inbox and the ledger it writes. */
export const CONSUMER_SCHEMA = 'consumer_svc';
/** Ordered per aggregate (`acct`); `note` events are not. */
export const ORDERED_TYPE = 'credited';

/** Outbox events: half `acct.credited` (ordered) over `aggregates` accounts, half `note.noted`. */
export async function seedEvents(db: Kysely<object>, n: number, aggregates = 200): Promise<string[]> {
  const outbox = createOutbox({ orderedEventTypes: [ORDERED_TYPE] });
  const ids: string[] = [];
  for (let start = 0; start < n; start += 1_000) {
    const events: OutboxEvent[] = Array.from({ length: Math.min(1_000, n - start) }, (_, k) => {
      const i = start + k;
      return i % 2 === 0
        ? { aggregateType: 'acct', aggregateId: `a${i % aggregates}`, eventType: ORDERED_TYPE, payload: { n: i }, headers: { traceparent: `00-${'0'.repeat(31)}1-${'0'.repeat(15)}1-01` } }
        : { aggregateType: 'note', aggregateId: `n${i}`, eventType: 'noted', payload: { n: i } };
    });
    ids.push(...(await outbox.addMany(db, events)));
  }
  return ids;
}

/** Creates the consumer's schema, inbox and ledger (no unique key: only the inbox prevents doubles). */
export async function installConsumer(db: Kysely<object>, pool: pg.Pool): Promise<Inbox> {
  // each scenario starts from an empty outbox and a new consumer service
  await sql`TRUNCATE leasehold.outbox, leasehold.outbox_group`.execute(db);
  await sql`DROP SCHEMA IF EXISTS ${sql.id(CONSUMER_SCHEMA)} CASCADE`.execute(db);
  await sql`CREATE SCHEMA ${sql.id(CONSUMER_SCHEMA)}`.execute(db);
  await migrateInbox(pool, { schema: CONSUMER_SCHEMA });
  await sql`CREATE TABLE ${sql.id(CONSUMER_SCHEMA, 'ledger')} (
    seq bigserial PRIMARY KEY, message_id text NOT NULL, aggregate text NOT NULL, n int NOT NULL, traced boolean NOT NULL,
    redelivered boolean NOT NULL)`.execute(db);
  return createInbox({ schema: CONSUMER_SCHEMA });
}

/** What the consumer's `apply` writes for one event (inside the inbox's transaction). */
export async function applyToLedger(
  trx: { query: (text: string, values?: unknown[]) => Promise<unknown> },
  event: {
    id: string; aggregateType: string; key: string; payload: unknown; headers: Readonly<Record<string, string>>;
    /** JetStream's delivery count, RabbitMQ's redelivered flag: whether the broker delivered it before. */
    deliveryCount?: number; redelivered?: boolean;
  },
): Promise<void> {
  await trx.query(`INSERT INTO ${CONSUMER_SCHEMA}.ledger (message_id, aggregate, n, traced, redelivered) VALUES ($1, $2, $3, $4, $5)`, [
    event.id,
    `${event.aggregateType}:${event.key}`,
    (event.payload as { n: number }).n,
    event.headers.traceparent !== undefined,
    (event.deliveryCount ?? 1) > 1 || event.redelivered === true,
  ]);
}

/** Outbox rows by status. */
export async function outboxCounts(db: Kysely<object>): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: string }>`SELECT status, count(*) AS n FROM leasehold.outbox GROUP BY status`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

/** Ledger rows so far. */
export async function ledgerCount(db: Kysely<object>): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.id(CONSUMER_SCHEMA, 'ledger')}`.execute(db);
  return Number(rows[0]!.n);
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `deadlineMs`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, what: string, deadlineMs: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > deadlineMs) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until `count()` reaches `target`. It fails only when the count stops moving for
 * `stallMs` — something is stuck — not because a loaded machine is slow; the error then
 * carries what `describe()` saw.
 */
export async function waitForCount(
  count: () => Promise<number>,
  target: number,
  what: string,
  stallMs: number,
  describe: () => Promise<unknown> = async () => undefined,
): Promise<void> {
  let last = -1;
  let movedAt = Date.now();
  for (;;) {
    const n = await count();
    if (n >= target) return;
    if (n !== last) {
      last = n;
      movedAt = Date.now();
    } else if (Date.now() - movedAt > stallMs) {
      const seen = await describe().catch((error: unknown) => `(describe failed: ${String(error)})`);
      throw new Error(`${what}: stuck at ${n} of ${target} for ${stallMs} ms; ${JSON.stringify(seen)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * How long the consumer may apply nothing before it counts as stuck: a message whose ack was lost
 * comes back within the JetStream consumer's `ack_wait` (5 s) plus `retryDelay`, and a pull lost
 * in a leader change is renewed within consumeJetStream's `pullExpires` (5 s, two missed
 * heartbeats); four times the longer of them.
 */
export const CONSUMER_STALL_MS = 4 * 5_000;

/** The end state every scenario must reach; returns the counts for the summary line. */
export async function expectExactlyOnce(db: Kysely<object>, ids: readonly string[]): Promise<{ lost: number; applied: number; outOfOrder: number }> {
  const counts = await outboxCounts(db);
  expect(counts, 'outbox rows by status').toEqual({ done: ids.length });
  const { rows } = await sql<{ message_id: string; n: string; aggregate: string; traced: boolean }>`
    SELECT message_id, count(*) AS n, min(aggregate) AS aggregate, bool_and(traced) AS traced
    FROM ${sql.id(CONSUMER_SCHEMA, 'ledger')} GROUP BY message_id`.execute(db);
  const applied = new Map(rows.map((r) => [r.message_id, Number(r.n)]));
  const lost = ids.filter((id) => !applied.has(id)).length;
  const twice = rows.filter((r) => Number(r.n) !== 1).map((r) => r.message_id);
  expect(lost, 'events never applied').toBe(0);
  expect(twice, 'events applied more than once').toEqual([]);
  expect(rows.length).toBe(ids.length);
  // the trace context recorded with the event reached the consumer
  expect(rows.filter((r) => r.aggregate.startsWith('acct:') && !r.traced)).toEqual([]);
  // Ordered aggregates: applied in outbox id order (= commit order of the producer), except that
  // a redelivered message comes after the ones behind it (docs/brokers.md, "Order"): a delivery
  // lost as a stream leader dies, or an ack that never arrived, is delivered again only after
  // the consumer's ack wait, while the new leader goes on with the later messages. An event
  // applied late on its first delivery would mean the outbox published out of order.
  const { rows: disorder } = await sql<{ n: string; redelivered: string }>`
    SELECT count(*) AS n, count(*) FILTER (WHERE redelivered) AS redelivered FROM (
      SELECT message_id::bigint < lag(message_id::bigint) OVER (PARTITION BY aggregate ORDER BY seq) AS back, redelivered
      FROM ${sql.id(CONSUMER_SCHEMA, 'ledger')} WHERE aggregate LIKE 'acct:%') AS t
    WHERE back`.execute(db);
  const outOfOrder = Number(disorder[0]!.n);
  const lateRedeliveries = Number(disorder[0]!.redelivered);
  expect(outOfOrder - lateRedeliveries, 'ordered events applied on their first delivery before an earlier one of their aggregate').toBe(0);
  return { lost, applied: rows.length, outOfOrder };
}

/** Prints `brokers: <scenario>: key=value …`, one line per scenario. */
export function summary(scenario: string, counts: Record<string, number | string>): void {
  console.log(`brokers: ${scenario}: ${Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(' ')}`);
}
