import { sql, type Kysely } from 'kysely';
import { RECEIVER_SCHEMA, SHOP_SCHEMA } from './settings.js';
import type { DemoDatabase } from './tables.js';

/** The demo's end-to-end check, read from both services' tables. */
export interface Verification {
  /** Outbox rows: every event the order service committed. */
  readonly created: number;
  readonly delivered: number;
  readonly dead: number;
  /** Rows in the receiver's `applied` table (a duplicate application would add one). */
  readonly appliedRows: number;
  /** Events applied a number of times other than exactly once (never, or twice or more). */
  readonly notExactlyOnce: number;
  /** Delivery attempts beyond the first, summed: 503 retries and crash re-claims. */
  readonly retries: number;
}

/**
 * Compares the outbox with what the receiver applied: each outbox id must appear exactly once
 * in `applied`. The receiver's table has no unique key, so only the inbox stands between a
 * redelivery and a second application.
 */
export async function verify(db: Kysely<DemoDatabase>): Promise<Verification> {
  const outbox = sql.id(SHOP_SCHEMA, 'outbox');
  const applied = sql.id(RECEIVER_SCHEMA, 'applied');
  const { rows } = await sql<{
    created: string; delivered: string; dead: string; retries: string | null; applied_rows: string; not_exactly_once: string;
  }>`
    SELECT
      (SELECT count(*) FROM ${outbox}) AS created,
      (SELECT count(*) FROM ${outbox} WHERE status = 'done') AS delivered,
      (SELECT count(*) FROM ${outbox} WHERE status = 'dead') AS dead,
      (SELECT sum(attempts - 1) FROM ${outbox} WHERE attempts > 0) AS retries,
      (SELECT count(*) FROM ${applied}) AS applied_rows,
      (SELECT count(*) FROM ${outbox} AS o
         LEFT JOIN (SELECT event_id, count(*) AS n FROM ${applied} GROUP BY event_id) AS a ON a.event_id = o.id::text
        WHERE coalesce(a.n, 0) <> 1) AS not_exactly_once
  `.execute(db);
  const r = rows[0]!;
  return {
    created: Number(r.created),
    delivered: Number(r.delivered),
    dead: Number(r.dead),
    appliedRows: Number(r.applied_rows),
    notExactlyOnce: Number(r.not_exactly_once),
    retries: Number(r.retries ?? 0),
  };
}

/** Delivery attempts of one event so far (a crashed attempt counts). */
export async function attemptsOf(db: Kysely<DemoDatabase>, eventId: string): Promise<number> {
  const { rows } = await sql<{ attempts: number }>`
    SELECT attempts FROM ${sql.id(SHOP_SCHEMA, 'outbox')} WHERE id = ${eventId}`.execute(db);
  return rows[0]?.attempts ?? 0;
}
